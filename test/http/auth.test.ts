import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { NOT_AUTHENTICATED, createTestApp, errorOf, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const failed = (source: string) =>
  errorOf('authentication_failed', 'authentication_error', `Personal API key found in request ${source} is invalid.`);

describe('private API authentication', () => {
  test('no credentials → 401 not_authenticated', async () => {
    const res = await t.json('GET', '/api/projects/', { key: null });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(NOT_AUTHENTICATED);
  });

  test.each([
    ['header', { key: 'phx_unknown' }, 'Authorization header'],
    ['query', { key: null, path: '?personal_api_key=phx_unknown' }, 'query string'],
  ])('an unknown key in the %s → 401 authentication_failed', async (_, opts, source) => {
    const res = await t.json('GET', `/api/projects/${(opts as { path?: string }).path ?? ''}`, { key: opts.key });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(failed(source));
  });

  test('an unknown key in the body → 401 naming the body', async () => {
    const res = await t.json('PATCH', `/api/projects/${t.account.project.id}/`, { key: null, body: { personal_api_key: 'phx_unknown', name: 'x' } });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(failed('body'));
  });

  test('the key is accepted from the header, the query and the body', async () => {
    const key = t.account.personalApiKey.value;
    expect((await t.call('GET', '/api/projects/')).status).toBe(200);
    expect((await t.call('GET', `/api/projects/?personal_api_key=${key}`, { key: null })).status).toBe(200);
    const viaBody = await t.json('PATCH', `/api/projects/${t.account.project.id}/`, { key: null, body: { personal_api_key: key, name: 'Via body' } });
    expect(viaBody.status).toBe(200);
    expect(viaBody.body.name).toBe('Via body');
  });

  test('a project API key never authenticates the private API', async () => {
    const res = await t.json('GET', '/api/projects/', { key: t.account.project.apiToken });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(failed('Authorization header'));
  });

  test('a revoked key → 401; keys are stored only as SHA-256 hashes', async () => {
    const { management } = t.deps.storage;
    const key = await management.createPersonalApiKey(t.account.user.id, 'temp');
    expect((await t.call('GET', '/api/projects/', { key: key.value })).status).toBe(200);
    expect(await management.revokePersonalApiKey(key.id)).toBe(true);
    const res = await t.json('GET', '/api/projects/', { key: key.value });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(failed('Authorization header'));
    // Nothing on disk holds the plaintext key.
    await t.deps.storage.close();
    const bytes = await Bun.file(`${t.dataDir}/analytics.duckdb`).arrayBuffer();
    const text = Buffer.from(bytes).toString('latin1');
    expect(text.includes(key.value)).toBe(false);
    expect(text.includes(new Bun.CryptoHasher('sha256').update(key.value).digest('hex'))).toBe(true);
    t = await createTestApp();
  });
});
