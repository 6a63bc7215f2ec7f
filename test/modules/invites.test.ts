import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { BASE, NOT_AUTHENTICATED, NOT_FOUND, createOtherAccount, createTestApp, errorOf, type TestApp } from '../helpers/test-app';

let t: TestApp;
let clock = new Date('2024-05-01T10:00:00.000Z');
beforeAll(async () => {
  t = await createTestApp({}, () => clock);
});
afterAll(() => t.close());

const URL = '/api/organizations/@current/invites/';
/** Invites are listed newest first; each create in these tests happens a second later. */
const tick = () => {
  clock = new Date(clock.getTime() + 1000);
};
const UUID = expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
const me = () => ({
  id: t.account.user.id,
  uuid: t.account.user.uuid,
  distinct_id: t.account.user.distinctId,
  first_name: t.account.user.firstName,
  email: t.account.user.email,
});
const invite = (overrides: Record<string, unknown>) => ({
  id: UUID,
  target_email: 'someone@example.com',
  first_name: '',
  emailing_attempt_made: false,
  level: 1,
  is_expired: false,
  created_by: me(),
  created_at: clock.toISOString(),
  updated_at: clock.toISOString(),
  message: null,
  ...overrides,
});
const invalid = (detail: string, attr: string | null, code = 'invalid_input') => errorOf(code, 'validation_error', detail, attr);

describe('invites', () => {
  test('create needs only target_email and answers 201 with the whole invite', async () => {
    const res = await t.json('POST', URL, { body: { target_email: 'someone@example.com' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(invite({}));
  });

  test('create accepts first_name, message and level, and lower-cases the domain only', async () => {
    tick();
    const body = { target_email: 'Mixed.Case@EXAMPLE.ORG', first_name: 'Mia', message: 'Join us', level: 8, send_email: true };
    const res = await t.json('POST', URL, { body });
    expect(res.status).toBe(201);
    expect(res.body).toEqual(invite({ target_email: 'Mixed.Case@example.org', first_name: 'Mia', message: 'Join us', level: 8 }));
  });

  test('list is the envelope, newest first, by @current or by id', async () => {
    tick();
    const newest = (await t.json('POST', URL, { body: { target_email: 'newest@example.com' } })).body;
    const list = await t.json('GET', URL);
    expect(list.status).toBe(200);
    expect(list.body.count).toBe(3);
    expect(list.body.results[0]).toEqual(newest);
    expect(list.body.results.map((i: { target_email: string }) => i.target_email)).toEqual(['newest@example.com', 'Mixed.Case@example.org', 'someone@example.com']);
    const byId = await t.json('GET', `/api/organizations/${t.account.organization.id}/invites/?limit=1`);
    expect(byId.body).toEqual({
      count: 3,
      next: `${BASE}/api/organizations/${t.account.organization.id}/invites/?limit=1&offset=1`,
      previous: null,
      results: [newest],
    });
  });

  test('a new invite for the same address replaces the pending one', async () => {
    const before = (await t.json('GET', URL)).body.results.find((i: { target_email: string }) => i.target_email === 'someone@example.com');
    const again = await t.json('POST', URL, { body: { target_email: 'SOMEONE@example.com', first_name: 'Again' } });
    expect(again.status).toBe(201);
    const list = (await t.json('GET', URL)).body;
    const matching = list.results.filter((i: { target_email: string }) => i.target_email.toLowerCase() === 'someone@example.com');
    expect(matching).toEqual([again.body]);
    expect(again.body.id).not.toBe(before.id);
  });

  test.each([
    [{ target_email: 'not-an-email' }, invalid('Enter a valid email address.', 'target_email')],
    [{ first_name: 'No address' }, invalid(expect.any(String) as never, 'target_email')],
    [{ target_email: 'x@example.com', level: 5 }, invalid('"5" is not a valid choice.', 'level', 'invalid_choice')],
    [{ target_email: 'x@example.com', first_name: 'x'.repeat(31) }, invalid(expect.any(String) as never, 'first_name')],
  ])('a bad invite is a 400: %j', async (body, expected) => {
    const res = await t.json('POST', URL, { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(expected);
  });

  test('inviting a member is a 400 on target_email', async () => {
    const res = await t.json('POST', URL, { body: { target_email: t.account.user.email.toUpperCase() } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(invalid('A user with this email address already belongs to the organization.', 'target_email'));
  });

  test('an invite expires after INVITE_EXPIRY_DAYS (3)', async () => {
    const created = (await t.json('POST', URL, { body: { target_email: 'later@example.com' } })).body;
    const saved = clock;
    clock = new Date(saved.getTime() + 3 * 86_400_000 - 1000);
    const find = async () => (await t.json('GET', URL)).body.results.find((i: { id: string }) => i.id === created.id);
    expect((await find()).is_expired).toBe(false);
    clock = new Date(saved.getTime() + 3 * 86_400_000 + 1000);
    expect(await find()).toEqual({ ...created, is_expired: true });
    clock = saved;
  });

  test('delete answers 204, then the invite is gone', async () => {
    const created = (await t.json('POST', URL, { body: { target_email: 'doomed@example.com' } })).body;
    const del = await t.call('DELETE', `${URL}${created.id}/`);
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    expect((await t.json('GET', URL)).body.results.map((i: { id: string }) => i.id)).not.toContain(created.id);
    for (const id of [created.id, crypto.randomUUID(), 'not-a-uuid']) {
      const again = await t.json('DELETE', `${URL}${id}/`);
      expect(again.status).toBe(404);
      expect(again.body).toEqual(NOT_FOUND);
    }
  });
});

describe('bulk invites', () => {
  test('a list answers 201 with the invites', async () => {
    const res = await t.json('POST', `${URL}bulk/`, { body: [{ target_email: 'b1@example.com' }, { target_email: 'b2@example.com', first_name: 'B' }] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual([invite({ target_email: 'b1@example.com' }), invite({ target_email: 'b2@example.com', first_name: 'B' })]);
  });

  test('a single object is one invite', async () => {
    const res = await t.json('POST', `${URL}bulk/`, { body: { target_email: 'single@example.com' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual([invite({ target_email: 'single@example.com' })]);
  });

  test('more than 20 is a 400, and nothing is created', async () => {
    const body = Array.from({ length: 21 }, (_, i) => ({ target_email: `many${i}@example.com` }));
    const res = await t.json('POST', `${URL}bulk/`, { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(invalid('A maximum of 20 invites can be sent in a single request.', null));
    const list = (await t.json('GET', URL)).body;
    expect(list.results.some((i: { target_email: string }) => i.target_email.startsWith('many'))).toBe(false);
  });

  test('one bad invite fails the request, and none of the others is created', async () => {
    const res = await t.json('POST', `${URL}bulk/`, { body: [{ target_email: 'fine@example.com' }, { target_email: t.account.user.email }] });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(invalid('A user with this email address already belongs to the organization.', 'target_email'));
    const list = (await t.json('GET', URL)).body;
    expect(list.results.some((i: { target_email: string }) => i.target_email === 'fine@example.com')).toBe(false);
  });
});

describe('another organization', () => {
  test('sees none of the invites and cannot change them', async () => {
    const other = await createOtherAccount(t, 'invites-other@example.com');
    const key = other.personalApiKey.value;
    expect((await t.json('GET', URL, { key })).body).toEqual({ count: 0, next: null, previous: null, results: [] });
    const mine = (await t.json('GET', URL)).body.results[0];
    const orgUrl = `/api/organizations/${t.account.organization.id}/invites/`;
    for (const [method, path, body] of [
      ['GET', orgUrl],
      ['POST', orgUrl, { target_email: 'intruder@example.com' }],
      ['POST', `${orgUrl}bulk/`, [{ target_email: 'intruder@example.com' }]],
      ['DELETE', `${orgUrl}${mine.id}/`],
    ] as const) {
      const res = await t.json(method, path, { key, body });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    expect((await t.json('DELETE', `${URL}${mine.id}/`, { key })).status).toBe(404);
    expect((await t.json('GET', URL)).body.results[0]).toEqual(mine);
  });

  test('no key is a 401', async () => {
    const res = await t.json('GET', URL, { key: null });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(NOT_AUTHENTICATED);
  });
});
