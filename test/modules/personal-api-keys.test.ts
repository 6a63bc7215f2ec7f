import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { NOT_AUTHENTICATED, NOT_FOUND, createOtherAccount, createTestApp, errorOf, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const ISO = expect.stringMatching(/^\d{4}-\d\d-\d\dT/);
const MASK = expect.stringMatching(/^phx_…\S{4}$/);

describe('personal API keys of the caller', () => {
  test('POST answers the key once in value; GET lists it (newest first) without it; the key works', async () => {
    const created = await t.json('POST', '/api/personal_api_keys/', { body: { label: 'deploy' } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      label: 'deploy',
      value: expect.stringMatching(/^phx_[A-Za-z0-9_-]{43}$/),
      mask_value: MASK,
      created_at: ISO,
      last_used_at: null,
      user_id: t.account.user.id,
      scopes: ['*'],
      scoped_teams: null,
      scoped_organizations: null,
    });
    const secret: string = created.body.value;
    expect(created.body.mask_value).toBe(`${secret.slice(0, 4)}…${secret.slice(-4)}`);

    const me = await t.json('GET', '/api/users/@me/', { key: secret });
    expect(me.status).toBe(200);

    const list = await t.json('GET', '/api/personal_api_keys/');
    expect(list.status).toBe(200);
    expect(list.body).toEqual([
      { ...created.body, value: null, last_used_at: list.body[0].last_used_at },
      { id: t.account.personalApiKey.id, label: 'Initial key', value: null, mask_value: MASK, created_at: ISO, last_used_at: ISO, user_id: t.account.user.id, scopes: ['*'], scoped_teams: null, scoped_organizations: null },
    ]);
    expect(JSON.stringify(list.body)).not.toContain(secret);

    const one = await t.json('GET', `/api/personal_api_keys/${created.body.id}/`);
    expect(one).toMatchObject({ status: 200, body: { id: created.body.id, label: 'deploy', value: null } });
  });

  test('DELETE revokes at once: the key is refused and no longer listed', async () => {
    const created = await t.json('POST', '/api/personal_api_keys/', { body: { label: 'temporary' } });
    expect((await t.json('GET', '/api/users/@me/', { key: created.body.value })).status).toBe(200);
    const res = await t.call('DELETE', `/api/personal_api_keys/${created.body.id}/`);
    expect(res.status).toBe(204);
    const refused = await t.json('GET', '/api/users/@me/', { key: created.body.value });
    expect(refused).toMatchObject({ status: 401, body: errorOf('authentication_failed', 'authentication_error', 'Personal API key found in request Authorization header is invalid.') });
    const list = await t.json('GET', '/api/personal_api_keys/');
    expect(list.body.map((k: { id: string }) => k.id)).not.toContain(created.body.id);
    expect(await t.json('DELETE', `/api/personal_api_keys/${created.body.id}/`)).toEqual({ status: 404, body: NOT_FOUND, headers: expect.anything() });
  });

  test("another user's keys can be neither listed, read nor revoked", async () => {
    const other = await createOtherAccount(t, 'keys-other@example.com');
    const theirs = other.personalApiKey.id;
    const list = await t.json('GET', '/api/personal_api_keys/');
    expect(list.body.map((k: { id: string }) => k.id)).not.toContain(theirs);
    expect((await t.json('GET', `/api/personal_api_keys/${theirs}/`)).body).toEqual(NOT_FOUND);
    expect((await t.json('DELETE', `/api/personal_api_keys/${theirs}/`)).body).toEqual(NOT_FOUND);
    expect((await t.json('GET', '/api/users/@me/', { key: other.personalApiKey.value })).status).toBe(200);
  });

  test.each([
    [{}, errorOf('invalid_input', 'validation_error', expect.any(String), 'label')],
    [{ label: 'x'.repeat(41) }, errorOf('invalid_input', 'validation_error', expect.any(String), 'label')],
    [{ label: 'read only', scopes: ['feature_flag:read'] }, errorOf('invalid_input', 'validation_error', 'Only the scope "*" is supported: a key has every permission of its user.', 'scopes')],
  ])('POST %j is a 400', async (body, error) => {
    const res = await t.json('POST', '/api/personal_api_keys/', { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(error);
  });

  test('at most 10 keys per user (PostHog), counted over the keys not revoked', async () => {
    const other = await createOtherAccount(t, 'many-keys@example.com');
    const key = other.personalApiKey.value;
    for (let i = 0; i < 9; i++) expect((await t.json('POST', '/api/personal_api_keys/', { key, body: { label: `k${i}` } })).status).toBe(201);
    const refused = await t.json('POST', '/api/personal_api_keys/', { key, body: { label: 'eleventh' } });
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual(errorOf('invalid_input', 'validation_error', 'You can only have 10 personal API keys. Remove an existing key before creating a new one.'));
  });

  test.each([['GET', '/api/personal_api_keys/'], ['POST', '/api/personal_api_keys/'], ['DELETE', '/api/personal_api_keys/x/']])('%s %s without a key is a 401', async (method, path) => {
    const res = await t.json(method, path, { key: null, body: method === 'POST' ? { label: 'x' } : undefined });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(NOT_AUTHENTICATED);
  });
});
