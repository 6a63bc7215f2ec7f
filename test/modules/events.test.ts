import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { uuidv7 } from '../../src/ids';
import { errorOf, NOT_AUTHENTICATED, NOT_FOUND } from '../helpers/test-app';
import { A_EVENTS, allPages, byKey, eventObject, NOW, openEventsFixture, relative, VISIBLE, type EventsFixture } from './events-fixture';

let f: EventsFixture;
beforeAll(async () => {
  f = await openEventsFixture();
});
afterAll(() => f.close());

const keysOf = (body: { results: Array<{ id: string }> }) =>
  body.results.map((r) => [...A_EVENTS].find((e) => e.uuid === r.id)?.key ?? r.id);
const invalid = (detail: string, attr: string) => errorOf('invalid_input', 'validation_error', detail, attr);

describe('GET /api/projects/:id/events/', () => {
  test('the envelope of every visible event, newest first, as PostHog shapes them', async () => {
    const { status, body } = await f.list();
    expect(status).toBe(200);
    expect(body).toEqual({ count: 6, next: null, previous: null, results: VISIBLE.map((e) => eventObject(e)) });
  });

  test('an autocapture event: elements parsed from its chain, the person with the PostHog subset', async () => {
    const { body } = await f.list({ event: '$autocapture' });
    expect(body.results).toEqual([
      {
        id: byKey('a3').uuid,
        distinct_id: 'alice',
        properties: { $event_type: 'click' },
        event: '$autocapture',
        timestamp: '2024-01-07T12:00:00.123000+00:00',
        person: { is_identified: true, distinct_ids: ['alice'], properties: { email: 'alice@example.com', name: 'Alice' } },
        elements: [
          {
            event: null, text: 'Sign up', tag_name: 'a', attr_class: ['btn', 'btn-primary'], href: '/signup', attr_id: null,
            nth_child: 2, nth_of_type: 1, attributes: { attr__class: 'btn btn-primary' }, order: 0,
          },
          { event: null, text: null, tag_name: 'div', attr_class: ['hero'], href: null, attr_id: null, nth_child: 1, nth_of_type: 1, attributes: {}, order: 1 },
        ],
        elements_chain: byKey('a3').properties.$elements_chain,
      },
    ]);
  });

  test.each([
    ['event', { event: 'signup' }, ['a4']],
    ['event, no match', { event: 'nope' }, []],
    ['distinct_id', { distinct_id: 'bob' }, ['a5', 'a4']],
    ['after (ISO, exclusive)', { after: '2024-01-08T12:00:00Z' }, ['a6', 'a5']],
    ['after (relative)', { after: '-2d' }, ['a6', 'a5']],
    ['before (ISO, exclusive)', { before: '2024-01-08T12:00:00Z' }, ['a3', 'a2', 'a1']],
    ['before (relative)', { before: '-1d' }, ['a4', 'a3', 'a2', 'a1']],
    ['after and before', { after: '-4d', before: '-1d' }, ['a4', 'a3']],
    ['after a date only', { after: '2024-01-09' }, ['a6', 'a5']],
    ['orderBy ascending', { orderBy: '["timestamp"]' }, ['a1', 'a2', 'a3', 'a4', 'a5', 'a6']],
    ['orderBy descending', { orderBy: '["-timestamp"]' }, ['a6', 'a5', 'a4', 'a3', 'a2', 'a1']],
    ['limit', { limit: '2' }, ['a6', 'a5']],
    ['offset', { limit: '2', offset: '2' }, ['a4', 'a3']],
    ['action_id (no actions exist)', { action_id: '1' }, []],
  ] as const)('%s', async (_name, query, expected) => {
    const { status, body } = await f.list(query as Record<string, string>);
    expect(status).toBe(200);
    expect(keysOf(body)).toEqual([...expected]);
  });

  test('before in the future shows future events (a bound a microsecond past one)', async () => {
    const { status, body } = await f.list({ before: '2024-01-10T13:00:00.000001Z' });
    expect(status).toBe(200);
    expect(keysOf(body)).toEqual(['a7', 'a6', 'a5', 'a4', 'a3', 'a2', 'a1']);
  });

  test.each([
    ['exact', [{ key: 'plan', value: 'pro' }], ['a5', 'a1']],
    ['exact, operator given', [{ key: 'plan', value: 'pro', operator: 'exact', type: 'event' }], ['a5', 'a1']],
    ['exact with a list (any of)', [{ key: 'plan', value: ['free', 'enterprise'] }], ['a6', 'a4']],
    ['is_not (missing counts as not equal)', [{ key: 'plan', value: 'pro', operator: 'is_not' }], ['a6', 'a4', 'a3', 'a2']],
    ['icontains', [{ key: '$current_url', value: 'EXAMPLE.com/B', operator: 'icontains' }], ['a6']],
    ['not_icontains', [{ key: 'plan', value: 'PRO', operator: 'not_icontains' }], ['a6', 'a4', 'a3', 'a2']],
    ['regex', [{ key: 'plan', value: '^(free|ent)', operator: 'regex' }], ['a6', 'a4']],
    ['not_regex', [{ key: 'plan', value: '^pro$', operator: 'not_regex' }], ['a6', 'a4', 'a3', 'a2']],
    ['gt (numbers and numeric text)', [{ key: 'price', value: 20, operator: 'gt' }], ['a5', 'a4']],
    ['gte', [{ key: 'price', value: '25.5', operator: 'gte' }], ['a5', 'a4']],
    ['lt', [{ key: 'price', value: 25.5, operator: 'lt' }], ['a1']],
    ['lte', [{ key: 'price', value: 25.5, operator: 'lte' }], ['a4', 'a1']],
    ['is_set', [{ key: 'tags', operator: 'is_set' }], ['a5']],
    ['is_not_set', [{ key: 'plan', operator: 'is_not_set' }], ['a3', 'a2']],
    ['is_date_before', [{ key: 'when', value: '2024-01-01', operator: 'is_date_before' }], []],
    ['hot property (materialized column)', [{ key: '$current_url', value: 'https://example.com/a' }], ['a1']],
    ['two filters are ANDed', [{ key: 'plan', value: 'pro' }, { key: 'price', value: 50, operator: 'gt' }], ['a5']],
    ['group OR', { type: 'OR', values: [{ key: 'plan', value: 'free' }, { key: 'price', value: 100 }] }, ['a5', 'a4']],
    [
      'nested groups',
      { type: 'AND', values: [{ type: 'OR', values: [{ key: 'plan', value: 'pro' }, { key: 'plan', value: 'free' }] }, { key: 'price', value: 10, operator: 'gt' }] },
      ['a5', 'a4'],
    ],
    ['a key with quotes and a comma', [{ key: 'quote"d,key', value: 'a,"b"\nc' }], ['a4']],
    ['a nested value is its JSON text', [{ key: 'nested', value: '{"deep":true}' }], ['a5']],
  ] as const)('properties: %s', async (_name, properties, expected) => {
    const { status, body } = await f.list({ properties: JSON.stringify(properties) });
    expect(status).toBe(200);
    expect(keysOf(body)).toEqual([...expected]);
    expect(body.count).toBe(expected.length);
  });

  test('properties: person property', async () => {
    const { status, body } = await f.list({ properties: JSON.stringify([{ key: 'email', value: 'alice@', operator: 'icontains', type: 'person' }]) });
    expect(status).toBe(200);
    expect(keysOf(body)).toEqual(['a3', 'a2', 'a1']);
    expect(body.count).toBe(3);
  });

  test('the count of an open listing (its fast path) leaves out future events, as the general one does', async () => {
    const queries: Array<Record<string, string>> = [{}, { event: '$pageview' }, { distinct_id: 'carol' }, { event: '$pageview', distinct_id: 'carol' }];
    for (const query of queries) {
      const open = (await f.list(query)).body;
      const general = (await f.list({ ...query, after: '2000-01-01' })).body;
      expect(open.count).toBe(general.count);
      expect(open.count).toBe(open.results.length);
    }
    expect((await f.list({ event: '$pageview' })).body.count).toBe(2);
  });

  test('person_id: the person uuid or integer id matches all of its distinct ids (after a merge too)', async () => {
    const alice = f.t.deps.storage.persons.findByDistinctId(f.projectId, 'alice')!;
    for (const id of [alice.uuid, String(alice.id), alice.uuid.toUpperCase(), alice.uuid.replaceAll('-', '')]) {
      const { body } = await f.list({ person_id: id });
      expect(keysOf(body)).toEqual(['a3', 'a2', 'a1']);
      expect(body.count).toBe(3);
    }
    expect((await f.list({ person_id: uuidv7() })).body).toEqual({ count: 0, next: null, previous: null, results: [] });
    expect((await f.list({ person_id: '999999' })).body.results).toEqual([]);
  });

  test.each([
    ['after', { after: 'yesterday' }, "Invalid date 'yesterday': use ISO 8601 or a relative date such as -7d, -24h or -1m"],
    ['before', { before: '2024-13-01' }, "Invalid date '2024-13-01': use ISO 8601 or a relative date such as -7d, -24h or -1m"],
    ['limit', { limit: '0' }, 'A valid integer is required.'],
    ['limit', { limit: 'x' }, 'A valid integer is required.'],
    ['offset', { offset: '-1' }, 'A valid integer is required.'],
    ['offset', { offset: '50001' }, 'Offset must be at most 50000; follow the next link to page further.'],
    ['properties', { properties: '{not json' }, 'Properties are unparsable!'],
    ['properties', { properties: '[{"key":"plan","operator":"bogus","value":1}]' }, "Invalid property filter at properties[0]: operator 'bogus' is not supported"],
    ['orderBy', { orderBy: '["event"]' }, 'orderBy must be ["-timestamp"] or ["timestamp"]'],
    ['where', { where: '["event = \'x\'"]' }, "Cannot use 'where' without 'select'"],
    ['cursor', { cursor: 'garbage' }, 'Invalid cursor: follow the next link as given.'],
  ] as const)('a bad %s is a 400 naming it', async (attr, query, detail) => {
    const { status, body } = await f.list(query as Record<string, string>);
    expect(status).toBe(400);
    expect(body).toEqual(invalid(detail, attr));
  });

  test('a bad format is a 400 invalid_choice', async () => {
    const { status, body } = await f.list({ format: 'xml' });
    expect(status).toBe(400);
    expect(body).toEqual(errorOf('invalid_choice', 'validation_error', '"xml" is not a valid choice: use csv, json, ndjson or parquet.', 'format'));
  });

  test('a limit above 1000 is clamped, as PostHog does', async () => {
    const { status, body } = await f.list({ limit: '5000' });
    expect(status).toBe(200);
    expect(body.results.length).toBe(6);
  });

  test('the events are recorded as queried for their event definitions', async () => {
    await f.list({ event: 'signup' });
    await Bun.sleep(50);
    const usage = await f.t.deps.storage.definitions.eventQueryUsage(f.projectId, ['signup'], new Date(NOW.getTime() - 86_400_000));
    expect(usage.get('signup')).toBeGreaterThanOrEqual(1);
  });
});

describe('pagination', () => {
  const follow = (first: Record<string, string>) => allPages(f, first, 20);

  test('next keeps the filters, freezes before and carries a keyset cursor', async () => {
    const { body } = await f.list({ limit: '2', distinct_id: 'bob' });
    expect(body.count).toBe(2);
    expect(body.next).toBeNull();
    const first = await f.list({ limit: '2', properties: '[{"key":"plan","operator":"is_set"}]' });
    const next = new URL(first.body.next);
    expect(Object.fromEntries(next.searchParams)).toEqual({
      limit: '2',
      properties: '[{"key":"plan","operator":"is_set"}]',
      cursor: `${byKey('a5').timestamp.toISOString()},${byKey('a5').uuid}`,
      before: '2024-01-10T12:00:05.000000Z',
    });
    expect(next.origin + next.pathname).toBe(`http://test.local/api/projects/${f.projectId}/events/`);
  });

  test('following next walks every event once, with the same count on every page', async () => {
    const pages = await follow({ limit: '2' });
    expect(pages.map((p) => keysOf(p))).toEqual([['a6', 'a5'], ['a4', 'a3'], ['a2', 'a1']]);
    expect(pages.map((p) => p.count)).toEqual([6, 6, 6]);
    expect(pages.map((p) => p.previous)).toEqual([null, null, null]);
  });

  test('ascending pages too', async () => {
    const pages = await follow({ limit: '4', orderBy: '["timestamp"]' });
    expect(pages.map((p) => keysOf(p))).toEqual([['a1', 'a2', 'a3', 'a4'], ['a5', 'a6']]);
  });

  test('offset pages link back with previous', async () => {
    const { body } = await f.list({ limit: '2', offset: '3' });
    expect(keysOf(body)).toEqual(['a3', 'a2']);
    expect(body.previous).toBe(`http://test.local/api/projects/${f.projectId}/events/?limit=2&offset=1`);
    const back = await f.t.json('GET', relative(body.previous));
    expect(keysOf(back.body)).toEqual(['a5', 'a4']);
    expect(back.body.previous).toBe(`http://test.local/api/projects/${f.projectId}/events/?limit=2`);
  });

  test('events with the same timestamp across a page boundary are neither repeated nor skipped', async () => {
    const g = await openEventsFixture();
    try {
      const same = new Date(NOW.getTime() - 60_000);
      const tied = Array.from({ length: 5 }, (_, i) => ({ event: 'tied', distinct_id: `t${i}`, timestamp: same, properties: {}, uuid: uuidv7(same.getTime()) }));
      await g.ingest(g.t.account.project.apiToken, tied);
      const ids = (await allPages(g, { event: 'tied', limit: '2' }, 5)).flatMap((p) => p.results.map((r) => r.id));
      expect(ids).toEqual(tied.map((e) => e.uuid).sort().reverse());
    } finally {
      await g.close();
    }
  });

  test('next stays correct while new events arrive, newer and older than the cursor', async () => {
    const g = await openEventsFixture();
    try {
      const token = g.t.account.project.apiToken;
      const page1 = await g.list({ limit: '2' });
      expect(keysOf(page1.body)).toEqual(['a6', 'a5']);
      // Arriving after page 1: one newer than everything shown (before the frozen bound), one late
      // event stamped between a4 and a3, one past the frozen bound.
      const newer = { event: 'new', distinct_id: 'n', timestamp: new Date(NOW.getTime() - 60_000), properties: {}, uuid: uuidv7() };
      const late = { event: 'late', distinct_id: 'l', timestamp: new Date(byKey('a4').timestamp.getTime() - 1000), properties: {}, uuid: uuidv7() };
      const beyond = { event: 'beyond', distinct_id: 'b', timestamp: new Date(NOW.getTime() + 10_000), properties: {}, uuid: uuidv7() };
      await g.ingest(token, [newer, late, beyond]);
      const page2 = await g.t.json('GET', relative(page1.body.next));
      const page3 = await g.t.json('GET', relative(page2.body.next));
      const page4 = page3.body.next ? await g.t.json('GET', relative(page3.body.next)) : null;
      const later = [page2.body, page3.body, ...(page4 ? [page4.body] : [])].flatMap((p) => p.results.map((r: { id: string }) => r.id));
      const key = (id: string) => [...A_EVENTS, late].find((e) => e.uuid === id)?.event === 'late' ? 'late' : (A_EVENTS.find((e) => e.uuid === id)?.key ?? id);
      expect(later.map(key)).toEqual(['a4', 'late', 'a3', 'a2', 'a1']);
      // The count of the (frozen) listing includes what arrived inside it.
      expect(page2.body.count).toBe(8);
    } finally {
      await g.close();
    }
  });
});

describe('access', () => {
  test('without a key: 401', async () => {
    const { status, body } = await f.list({}, '');
    expect(status).toBe(401);
    expect(body).toEqual(NOT_AUTHENTICATED);
  });

  test("another organization's user gets 404 for this project, and sees only its own events", async () => {
    const denied = await f.list({}, f.other.key);
    expect(denied.status).toBe(404);
    expect(denied.body).toEqual(NOT_FOUND);
    const own = await f.t.json('GET', `/api/projects/${f.other.projectId}/events/`, { key: f.other.key });
    expect(own.body.results.map((r: { event: string }) => r.event)).toEqual(['secret']);
    const theirs = await f.t.json('GET', `/api/projects/${f.other.projectId}/events/`);
    expect(theirs.status).toBe(404);
  });

  test("a second project of the same organization has its own events only", async () => {
    const { body } = await f.t.json('GET', `/api/projects/${f.projectC}/events/`);
    expect(body.results.map((r: { id: string }) => r.id)).toEqual([byKey('c1').uuid]);
  });

  test('@current names the user’s current project', async () => {
    const { body } = await f.t.json('GET', '/api/projects/@current/events/?limit=1');
    expect(keysOf(body)).toEqual(['a6']);
  });

  test.each(['POST', 'PUT', 'PATCH', 'DELETE'])('%s is a 405', async (method) => {
    for (const path of [`/api/projects/${f.projectId}/events/`, `/api/projects/${f.projectId}/events/${byKey('a1').uuid}/`]) {
      const res = await f.t.json(method, path, { body: {} });
      expect(res.status).toBe(405);
      expect(res.body).toEqual(errorOf('method_not_allowed', 'invalid_request', `Method "${method}" not allowed.`));
    }
  });
});
