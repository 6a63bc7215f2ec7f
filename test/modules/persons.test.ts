import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { CreatedAccount } from '../../src/storage';
import { BASE, NOT_AUTHENTICATED, NOT_FOUND, createOtherAccount, createTestApp, errorOf, reopenTestApp, type TestApp } from '../helpers/test-app';

/** The persons API over persons made by real ingestion (POST /batch/ with $identify / $set). */
const NOW = new Date('2024-03-01T12:00:00.000Z');
const DAY = 86_400_000;
const URL = '/api/projects/@current/persons/';
let t: TestApp;
let other: CreatedAccount;

const ago = (days: number) => new Date(NOW.getTime() - days * DAY).toISOString();

beforeAll(async () => {
  t = await createTestApp({}, () => NOW);
  other = await createOtherAccount(t, 'persons-other@example.com');
  const batch = [
    { event: '$pageview', distinct_id: 'anon-a', timestamp: ago(5), properties: {} },
    { event: '$identify', distinct_id: 'alice', timestamp: ago(4), properties: { $anon_distinct_id: 'anon-a' }, $set: { email: 'alice@example.com', plan: 'pro', age: 31 } },
    { event: '$pageview', distinct_id: 'bob', timestamp: ago(3), properties: { $set: { email: 'bob@test.org', plan: 'free', age: 25 } } },
    { event: '$identify', distinct_id: 'carol', timestamp: ago(2), properties: { $set: { name: 'Carol', plan: 'pro', age: 40 } } },
    { event: '$pageview', distinct_id: 'dave', timestamp: ago(1), properties: {} },
  ];
  const res = await t.call('POST', '/batch/', { key: null, body: { api_key: t.account.project.apiToken, batch } });
  expect(res.status).toBe(200);
  const theirs = await t.call('POST', '/batch/', {
    key: null,
    body: { api_key: other.project.apiToken, batch: [{ event: '$identify', distinct_id: 'eve', timestamp: ago(1), properties: { $set: { email: 'eve@example.com' } } }] },
  });
  expect(theirs.status).toBe(200);
  // Read-your-writes: the first request waits for the batch to be processed.
  expect((await t.json('GET', URL)).status).toBe(200);
});
afterAll(() => t.close());

const person = (distinctId: string) => t.deps.storage.persons.findByDistinctId(t.account.project.id, distinctId)!;

function body(distinctId: string) {
  const p = person(distinctId);
  const expected: Record<string, { name: string; distinct_ids: string[]; properties: Record<string, unknown>; created_at: string; is_identified: boolean }> = {
    alice: { name: 'alice@example.com', distinct_ids: ['alice', 'anon-a'], properties: { email: 'alice@example.com', plan: 'pro', age: 31 }, created_at: ago(5), is_identified: true },
    bob: { name: 'bob@test.org', distinct_ids: ['bob'], properties: { email: 'bob@test.org', plan: 'free', age: 25 }, created_at: ago(3), is_identified: false },
    carol: { name: 'Carol', distinct_ids: ['carol'], properties: { name: 'Carol', plan: 'pro', age: 40 }, created_at: ago(2), is_identified: false },
    dave: { name: 'dave', distinct_ids: ['dave'], properties: {}, created_at: ago(1), is_identified: false },
  };
  // Ingestion stamps the event that created the person.
  const e = expected[distinctId];
  return { id: p.id, uuid: p.uuid, ...e, properties: { ...e.properties, $creator_event_uuid: p.properties.$creator_event_uuid } };
}

const list = (...ids: string[]) => ({ count: ids.length, next: null, previous: null, results: ids.map(body) });
/** Status and body, for whole-body assertions. */
async function call(method: string, path: string, options?: Parameters<TestApp['json']>[2]) {
  const { status, body } = await t.json(method, path, options);
  return { status, body };
}
const q = (params: Record<string, string>) => `${URL}?${new URLSearchParams(params)}`;

describe('GET /persons/', () => {
  test('every person of the project, newest first', async () => {
    expect(await call('GET', URL)).toEqual({ status: 200, body: list('dave', 'carol', 'bob', 'alice') });
  });

  test('pagination links keep the other parameters', async () => {
    const first = await call('GET', q({ limit: '2', search: 'a' }));
    const link = (offset: number | null) => `${BASE}/api/projects/@current/persons/?limit=2${offset === null ? '' : `&offset=${offset}`}&search=a`;
    expect(first.body).toEqual({ count: 3, next: link(2), previous: null, results: [body('dave'), body('carol')] });
    const second = await call('GET', q({ limit: '2', offset: '2', search: 'a' }));
    expect(second.body).toEqual({ count: 3, next: null, previous: link(null), results: [body('alice')] });
  });

  test.each([
    ['search over distinct ids', { search: 'ANON-' }, ['alice']],
    ['search over email', { search: 'test.org' }, ['bob']],
    ['search over name', { search: 'caro' }, ['carol']],
    ['distinct_id, any of the person', { distinct_id: 'anon-a' }, ['alice']],
    ['distinct_id unknown', { distinct_id: 'nobody' }, []],
    ['properties: equality', { properties: JSON.stringify([{ key: 'plan', value: 'pro', type: 'person' }]) }, ['carol', 'alice']],
    ['properties: operators, ANDed', { properties: JSON.stringify([{ key: 'plan', value: 'pro', type: 'person' }, { key: 'age', value: 35, operator: 'gt', type: 'person' }]) }, ['carol']],
    ['properties: an OR group', { properties: JSON.stringify({ type: 'OR', values: [{ key: 'email', value: 'bob', operator: 'icontains', type: 'person' }, { key: 'name', operator: 'is_set', type: 'person' }] }) }, ['carol', 'bob']],
    ['properties: is_not_set', { properties: JSON.stringify([{ key: 'plan', operator: 'is_not_set', type: 'person' }]) }, ['dave']],
    ['filters together', { search: 'example', properties: JSON.stringify([{ key: 'plan', value: 'free', type: 'person' }]) }, []],
  ])('%s', async (_, params, ids) => {
    expect(await call('GET', q(params as Record<string, string>))).toEqual({ status: 200, body: list(...ids) });
  });

  test.each([
    ['unparsable JSON', '[{', 'Properties are unparsable!'],
    ['an event filter', JSON.stringify([{ key: '$browser', value: 'x', type: 'event' }]), "Invalid property filter at properties[0]: property filter type 'event' is not supported on persons"],
    ['a filter without key', JSON.stringify([{ value: 'x' }]), "Invalid property filter at properties[0]: a filter needs a string 'key'"],
  ])('400 for %s', async (_, properties, detail) => {
    expect(await call('GET', q({ properties }))).toEqual({ status: 400, body: errorOf('invalid_input', 'validation_error', detail, 'properties') });
  });

  test('401 without a key', async () => {
    expect(await call('GET', URL, { key: null })).toEqual({ status: 401, body: NOT_AUTHENTICATED });
  });

  test("another organization's project is a 404, and its persons stay its own", async () => {
    expect(await call('GET', `/api/projects/${other.project.id}/persons/`)).toEqual({ status: 404, body: NOT_FOUND });
    const theirs = await call('GET', URL, { key: other.personalApiKey.value });
    expect(theirs.body.results.map((p: { distinct_ids: string[] }) => p.distinct_ids)).toEqual([['eve']]);
  });
});

describe('GET /persons/:id/', () => {
  test('by integer id and by uuid, as the events list takes person_id', async () => {
    expect(await call('GET', `${URL}${person('alice').id}/`)).toEqual({ status: 200, body: body('alice') });
    expect(await call('GET', `${URL}${person('bob').uuid.toUpperCase()}/`)).toEqual({ status: 200, body: body('bob') });
    expect(await call('GET', `${URL}${person('bob').uuid.replaceAll('-', '')}/`)).toEqual({ status: 200, body: body('bob') });
  });

  test.each([['an unknown id', '999999'], ['an unknown uuid', '00000000-0000-4000-8000-000000000000'], ['neither', 'alice']])('404 for %s', async (_, id) => {
    expect(await call('GET', `${URL}${id}/`)).toEqual({ status: 404, body: NOT_FOUND });
  });

  test("another project's person is a 404", async () => {
    const eve = t.deps.storage.persons.findByDistinctId(other.project.id, 'eve')!;
    expect(await call('GET', `${URL}${eve.uuid}/`)).toEqual({ status: 404, body: NOT_FOUND });
    expect(await call('GET', `/api/projects/${other.project.id}/persons/${eve.id}/`)).toEqual({ status: 404, body: NOT_FOUND });
  });

  test('401 without a key', async () => {
    expect(await call('GET', `${URL}${person('alice').id}/`, { key: null })).toEqual({ status: 401, body: NOT_AUTHENTICATED });
  });
});

describe('PATCH /persons/:id/', () => {
  test('merges properties, is read back, and leaves nothing unflushed after a flush', async () => {
    const dave = person('dave');
    const creator = { $creator_event_uuid: dave.properties.$creator_event_uuid };
    const expected = { ...body('dave'), name: 'dave@example.com', properties: { ...creator, email: 'dave@example.com', plan: 'team' } };
    const patched = await call('PATCH', `${URL}${dave.id}/`, { body: { properties: { email: 'dave@example.com', plan: 'team' } } });
    expect(patched).toEqual({ status: 200, body: expected });
    const again = await call('PATCH', `${URL}${dave.uuid}/`, { body: { properties: { plan: 'enterprise' } } });
    const merged = { ...expected, properties: { ...creator, email: 'dave@example.com', plan: 'enterprise' } };
    expect(again.body).toEqual(merged);
    expect((await call('GET', `${URL}${dave.id}/`)).body).toEqual(merged);
    expect((await call('GET', q({ search: 'dave@' }))).body).toEqual({ count: 1, next: null, previous: null, results: [merged] });
    // The flush writes the same change the in-memory store shows: a cohort over the table sees it.
    await t.deps.storage.persons.flush();
    expect(t.deps.storage.persons.pendingChanges()).toBe(0);
  });

  test('404 for an unknown person, 401 without a key, 404 in another organization', async () => {
    expect(await call('PATCH', `${URL}999999/`, { body: { properties: { a: 1 } } })).toEqual({ status: 404, body: NOT_FOUND });
    expect(await call('PATCH', `${URL}${person('bob').id}/`, { key: null, body: { properties: { a: 1 } } })).toEqual({ status: 401, body: NOT_AUTHENTICATED });
    const eve = t.deps.storage.persons.findByDistinctId(other.project.id, 'eve')!;
    expect(await call('PATCH', `/api/projects/${other.project.id}/persons/${eve.id}/`, { body: { properties: { a: 1 } } })).toEqual({ status: 404, body: NOT_FOUND });
    expect(t.deps.storage.persons.findByDistinctId(other.project.id, 'eve')!.properties).toEqual({ email: 'eve@example.com', $creator_event_uuid: eve.properties.$creator_event_uuid });
  });
});

describe('PATCH /persons/:id/ with lone surrogates', () => {
  test('\\ud800 escapes alone are stored as U+FFFD, and the flush after them succeeds (it failed on every try before)', async () => {
    const carol = person('carol');
    const patched = await call('PATCH', `${URL}${carol.id}/`, { body: '{"properties":{"nick":"a\\ud800b","k\\udc00":["\\udbff"]}}' });
    expect(patched.status).toBe(200);
    expect(patched.body.properties).toEqual({ ...body('carol').properties, nick: 'a\ufffdb', 'k\ufffd': ['\ufffd'] });
    await t.deps.storage.persons.flush();
    expect(t.deps.storage.persons.pendingChanges()).toBe(0);
  });
});

describe('after a restart', () => {
  test('a PATCHed person reads back from the table as the API showed it', async () => {
    const before = await call('GET', `${URL}${person('dave').id}/`);
    expect(before.body.properties.plan).toBe('enterprise');
    t = await reopenTestApp(t, {}, () => NOW);
    expect(await call('GET', `${URL}${before.body.id}/`)).toEqual(before);
  });
});

describe('persons from pageviews, as posthog-js sends them', () => {
  test("a new page or browser alone does not update the person; the person's next other change, or a $set event, writes them", async () => {
    const app = await createTestApp({}, () => NOW);
    try {
      const send = async (event: string, properties: Record<string, unknown>) => {
        const res = await app.call('POST', '/e/', { key: null, body: { api_key: app.account.project.apiToken, event, distinct_id: 'erin', properties } });
        expect(res.status).toBe(200);
      };
      const erin = async () => {
        const listed = await app.json('GET', `${URL}?distinct_id=erin`);
        const { $creator_event_uuid: _creator, ...properties } = listed.body.results[0].properties;
        return properties;
      };
      const initial = { $initial_current_url: 'https://a.test/1', $initial_browser: 'Chrome' };
      await send('$pageview', { $current_url: 'https://a.test/1', $browser: 'Chrome' });
      expect(await erin()).toEqual({ $current_url: 'https://a.test/1', $browser: 'Chrome', ...initial });
      await send('$pageview', { $current_url: 'https://a.test/2', $browser: 'Firefox' });
      expect(await erin()).toEqual({ $current_url: 'https://a.test/1', $browser: 'Chrome', ...initial });
      await send('$pageview', { $current_url: 'https://a.test/3', $browser: 'Firefox', $set: { plan: 'pro' } });
      expect(await erin()).toEqual({ $current_url: 'https://a.test/3', $browser: 'Firefox', plan: 'pro', ...initial });
      await send('$set', { $current_url: 'https://a.test/4' });
      expect(await erin()).toEqual({ $current_url: 'https://a.test/4', $browser: 'Firefox', plan: 'pro', ...initial });
    } finally {
      await app.close();
    }
  });
});
