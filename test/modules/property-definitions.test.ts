import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { CreatedAccount } from '../../src/storage';
import { BASE, NOT_FOUND, createOtherAccount, createTestApp, errorOf, type TestApp } from '../helpers/test-app';

const NOW = new Date('2024-03-01T12:00:00.000Z');
const URL = '/api/projects/@current/property_definitions/';
let t: TestApp;
let other: CreatedAccount;

/** Events as SDKs send them: the definitions come from ingestion, through the real pipeline. */
const EVENTS = [
  { event: '$pageview', distinct_id: 'u1', properties: { $browser: 'Chrome', plan: null, distinct_id: 'u1', $set: { email: 'a@example.com', age: 30 } } },
  { event: 'purchase', distinct_id: 'u1', properties: { amount: 9.5, paid: true, coupon: 'FALSE', at: '2024-03-01T12:00:00Z', plan: 'pro', items: [1, 2], '$feature/beta': 'on' } },
  { event: 'signup', distinct_id: 'u2', properties: { plan: 'free', items: 'none', $set_once: { first_seen: '2024-02-29' } } },
];

const capture = async (token: string, batch: unknown[]) => {
  const res = await t.call('POST', '/batch/', { key: null, body: { api_key: token, batch } });
  expect(res.status).toBe(200);
  await t.deps.storage.events.awaitIntake(null, null);
  await t.deps.storage.seen.flush();
};

beforeAll(async () => {
  t = await createTestApp({}, () => NOW);
  other = await createOtherAccount(t, 'props-other@example.com');
  await capture(t.account.project.apiToken, EVENTS);
  await capture(other.project.apiToken, [{ event: 'theirs', distinct_id: 'x', properties: { secret: 1 } }]);
});
afterAll(() => t.close());

const def = (name: string, property_type: string | null, overrides: Record<string, unknown> = {}) => ({
  id: expect.stringMatching(/^[0-9a-f-]{36}$/),
  name,
  type: 'event',
  is_numerical: property_type === 'Numeric',
  property_type,
  description: null,
  tags: [],
  updated_at: null,
  updated_by: null,
  is_seen_on_filtered_events: null,
  ...overrides,
});
const envelope = (results: unknown[], count = results.length) => ({ count, next: null, previous: null, results });
const list = (query = '', key?: string) => t.json('GET', `${URL}${query}`, { key });
const names = async (query: string) => ((await list(query)).body.results as Array<{ name: string }>).map((d) => d.name);
const byName = async (name: string, type = 'event') => (await list(`?type=${type}&search=${encodeURIComponent(name)}`)).body.results.find((d: { name: string }) => d.name === name);
const me = () => ({ id: t.account.user.id, uuid: t.account.user.uuid, distinct_id: t.account.user.distinctId, first_name: t.account.user.firstName, email: t.account.user.email });
const eventNames = (names: string[]) => `event_names=${encodeURIComponent(JSON.stringify(names))}`;

describe('property definitions', () => {
  test('list: the envelope, by name, each with the type its values showed; internal keys left out', async () => {
    const res = await list();
    expect(res.status).toBe(200);
    expect(res.body).toEqual(
      envelope([
        def('$browser', 'String'),
        def('$feature/beta', 'String'),
        def('amount', 'Numeric'),
        def('at', 'DateTime'),
        def('coupon', 'Boolean'),
        // First seen as a list (no type), then as a string.
        def('items', 'String'),
        def('paid', 'Boolean'),
        // First seen null, then as a string.
        def('plan', 'String'),
      ]),
    );
  });

  test('person properties: $set and $set_once keys, and those events set on the person', async () => {
    const res = await list('?type=person');
    expect(res.body).toEqual(
      envelope(
        [
          def('$browser', 'String'),
          def('$initial_browser', 'String'),
          def('age', 'Numeric'),
          def('email', 'String'),
          def('first_seen', 'DateTime'),
        ].map((d) => ({ ...d, type: 'person' })),
      ),
    );
  });

  test('pages keep the other parameters', async () => {
    const res = await list('?limit=2&offset=2&search=a');
    expect(res.body).toEqual({
      count: 5,
      next: `${BASE}${URL}?limit=2&offset=4&search=a`,
      previous: `${BASE}${URL}?limit=2&search=a`,
      results: [def('at', 'DateTime'), def('paid', 'Boolean')],
    });
  });

  test('event_names: the properties those events carried come first, flagged', async () => {
    const seen = (name: string, type: string) => def(name, type, { is_seen_on_filtered_events: true });
    const res = await list(`?${eventNames(['signup', '$pageview'])}&search=r`);
    expect(res.body).toEqual(envelope([seen('$browser', 'String'), def('$feature/beta', 'String', { is_seen_on_filtered_events: false })]));
    const only = await list(`?${eventNames(['purchase'])}&filter_by_event_names=true`);
    expect(only.body).toEqual(
      envelope([
        seen('$feature/beta', 'String'),
        seen('amount', 'Numeric'),
        seen('at', 'DateTime'),
        seen('coupon', 'Boolean'),
        seen('items', 'String'),
        seen('paid', 'Boolean'),
        seen('plan', 'String'),
      ]),
    );
  });

  test.each([
    [`?${eventNames(['signup', '$pageview'])}`, ['$browser', 'items', 'plan', '$feature/beta', 'amount', 'at', 'coupon', 'paid']],
    [`?${eventNames(['nothing'])}&filter_by_event_names=true`, []],
    [`?${eventNames([])}`, ['$browser', '$feature/beta', 'amount', 'at', 'coupon', 'items', 'paid', 'plan']],
    ['?search=PA%20ID', ['paid']],
    ['?search=nothing', []],
    ['?is_numerical=true', ['amount']],
    ['?is_numerical=false&search=am', ['amount']],
    ['?is_feature_flag=true', ['$feature/beta']],
    ['?is_feature_flag=false&search=e', ['$browser', 'items']],
    ['?properties=paid,amount,unknown', ['amount', 'paid']],
    [`?excluded_properties=${encodeURIComponent('["amount","at"]')}&search=a`, ['$feature/beta', 'paid', 'plan']],
    ['?exclude_core_properties=true', ['amount', 'at', 'coupon', 'items', 'paid', 'plan']],
    ['?exclude_hidden=true&search=plan', ['plan']],
    ['?type=person&search=age', ['age']],
    ['?type=group&group_type_index=0', []],
    ['?type=session', []],
  ])('%s', async (query, expected) => {
    expect(await names(query)).toEqual(expected);
  });

  test.each([
    [`?type=person&${eventNames(['purchase'])}`, '`event_names` can only be set for `event` type', 'event_names'],
    ['?event_names=purchase', 'Expected a JSON list of strings.', 'event_names'],
    [`?event_names=${encodeURIComponent('[1]')}`, 'Expected a JSON list of strings.', 'event_names'],
    [`?excluded_properties=${encodeURIComponent('{"a":1}')}`, 'Expected a JSON list of strings.', 'excluded_properties'],
    ['?type=cohort', expect.any(String), 'type'],
    ['?is_numerical=maybe', expect.any(String), 'is_numerical'],
  ])('a bad list query is a 400: %s', async (query, detail, attr) => {
    const res = await list(query);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorOf('invalid_input', 'validation_error', detail as string, attr));
  });

  test('retrieve by id; unknown and malformed ids are 404', async () => {
    const amount = await byName('amount');
    const res = await t.json('GET', `${URL}${amount.id}/`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(def('amount', 'Numeric', { id: amount.id }));
    for (const id of [crypto.randomUUID(), 'nope']) expect((await t.json('GET', `${URL}${id}/`)).body).toEqual(NOT_FOUND);
  });

  test('PATCH sets description, tags and property_type, and records who and when', async () => {
    const coupon = await byName('coupon');
    const res = await t.json('PATCH', `${URL}${coupon.id}/`, { body: { description: 'Code used', tags: [' Growth ', 'growth', 'KPI', ''], name: 'renamed' } });
    expect(res.status).toBe(200);
    const stamped = { id: coupon.id, description: 'Code used', tags: ['growth', 'kpi'], updated_at: NOW.toISOString(), updated_by: me() };
    expect(res.body).toEqual(def('coupon', 'Boolean', stamped));
    expect((await t.json('GET', `${URL}${coupon.id}/`)).body).toEqual(res.body);
    const typed = await t.json('PATCH', `${URL}${coupon.id}/`, { body: { property_type: 'Numeric', description: null } });
    expect(typed.body).toEqual(def('coupon', 'Numeric', { ...stamped, description: null }));
    expect(await names('?is_numerical=true')).toEqual(['amount', 'coupon']);
    await t.json('PATCH', `${URL}${coupon.id}/`, { body: { property_type: 'Boolean' } });
  });

  test.each([
    [{ tags: 'growth' }, 'tags'],
    [{ property_type: 'Integer' }, 'property_type'],
    [{ description: 3 }, 'description'],
  ])('a bad PATCH is a 400: %j', async (body, attr) => {
    const amount = await byName('amount');
    const res = await t.json('PATCH', `${URL}${amount.id}/`, { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorOf('invalid_input', 'validation_error', expect.any(String) as unknown as string, attr));
  });

  test('PATCH of an unknown id is a 404', async () => {
    const res = await t.json('PATCH', `${URL}${crypto.randomUUID()}/`, { body: { description: 'x' } });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(NOT_FOUND);
  });

  test.each([
    ['POST', URL],
    ['DELETE', `${URL}00000000-0000-0000-0000-000000000000/`],
  ])('%s is a 405', async (method, path) => {
    const res = await t.json(method, path, { body: method === 'POST' ? { name: 'new' } : undefined });
    expect(res.status).toBe(405);
    expect(res.body).toEqual(errorOf('method_not_allowed', 'invalid_request', `Method "${method}" not allowed.`));
  });

  test('without a key: 401', async () => {
    const res = await t.json('GET', URL, { key: null });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(errorOf('not_authenticated', 'authentication_error', 'Authentication credentials were not provided.'));
  });
});

describe('types as ingestion records them', () => {
  test('a key first seen without a type takes the first typed value later; a typed one keeps its type', async () => {
    await capture(t.account.project.apiToken, [{ event: 'later', distinct_id: 'u3', properties: { fresh: null, amount: 'ten' } }]);
    expect(await byName('fresh')).toEqual(def('fresh', null, { id: expect.any(String) }));
    await capture(t.account.project.apiToken, [{ event: 'later', distinct_id: 'u3', properties: { fresh: 12, amount: 'eleven' } }]);
    expect(await byName('fresh')).toEqual(def('fresh', 'Numeric', { id: expect.any(String) }));
    expect(await byName('amount')).toEqual(def('amount', 'Numeric', { id: expect.any(String) }));
    expect(await names(`?${eventNames(['later'])}&filter_by_event_names=true`)).toEqual(['amount', 'fresh']);
  });
});

describe('another organization', () => {
  test('sees only its own definitions and cannot reach these', async () => {
    const key = other.personalApiKey.value;
    expect((await list('', key)).body).toEqual(envelope([def('secret', 'Numeric')]));
    const mine = await byName('amount');
    const project = t.account.project.id;
    for (const [method, path, body] of [
      ['GET', `/api/projects/${project}/property_definitions/`],
      ['GET', `/api/projects/${project}/property_definitions/${mine.id}/`],
      ['PATCH', `/api/projects/${project}/property_definitions/${mine.id}/`, { description: 'stolen' }],
      ['GET', `/api/projects/${other.project.id}/property_definitions/${mine.id}/`],
      ['PATCH', `/api/projects/${other.project.id}/property_definitions/${mine.id}/`, { description: 'stolen' }],
    ] as const) {
      const res = await t.json(method, path, { key, body });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
    expect((await byName('amount')).description).toBeNull();
  });
});
