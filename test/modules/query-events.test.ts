import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { isoTimestamp } from '../../src/modules/events/event-object';
import { errorOf, NOT_FOUND } from '../helpers/test-app';
import { byKey, CHAIN, CHAIN_ELEMENTS, eventObject, NOW, openEventsFixture, storedProperties, type EventsFixture, type FixtureEvent } from './events-fixture';

let f: EventsFixture;
beforeAll(async () => {
  f = await openEventsFixture();
  await f.t.deps.storage.persons.ensureLoaded(f.projectId);
});
afterAll(() => f.close());

const run = (query: Record<string, unknown>, options: { projectId?: number; key?: string } = {}) =>
  f.t.json('POST', `/api/projects/${options.projectId ?? f.projectId}/query/`, { body: { query: { kind: 'EventsQuery', ...query } }, key: options.key });
const personOf = (distinctId: string) => f.t.deps.storage.persons.findByDistinctId(f.projectId, distinctId)!;
const CREATED = isoTimestamp(NOW);

/** `*` as PostHog's EventsQuery gives it. */
const star = (e: FixtureEvent) => {
  const chain = e.properties.$elements_chain === CHAIN ? CHAIN : '';
  return {
    uuid: e.uuid, event: e.event, properties: storedProperties(e), timestamp: eventObject(e).timestamp, team_id: f.projectId,
    distinct_id: e.distinct_id, elements_chain: chain, created_at: CREATED, person_mode: 'full', ...(chain ? { elements: CHAIN_ELEMENTS } : {}),
  };
};

const UI_SELECT = ['*', 'event', 'person_display_name -- Person', 'coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen', 'properties.$lib', 'timestamp'];

describe('POST /query/ with an EventsQuery', () => {
  test("the events table of PostHog's UI: the event as an object, the person's display name, labelled columns", async () => {
    const res = await run({ select: UI_SELECT, orderBy: ['timestamp DESC'], after: '-7d' });
    expect(res.status).toBe(200);
    const rows = ['a6', 'a5', 'a4', 'a3', 'a2', 'a1'].map(byKey).map((e) => {
      const email = e.distinct_id.startsWith('alice') ? 'alice@example.com' : null;
      const url = typeof e.properties.$current_url === 'string' ? e.properties.$current_url : null;
      const display = { display_name: email ?? e.distinct_id, id: personOf(e.distinct_id).uuid, distinct_id: e.distinct_id };
      return [star(e), e.event, display, url, null, eventObject(e).timestamp];
    });
    expect(res.body).toEqual({
      columns: UI_SELECT,
      types: [
        "Tuple(String, String, String, DateTime64(6, 'UTC'), String, String, DateTime64(6, 'UTC'))",
        'String', 'Tuple(String, String)', 'Nullable(String)', 'Nullable(String)', "DateTime64(6, 'UTC')",
      ],
      results: rows,
      hasMore: false,
      limit: 100,
      offset: 0,
      hogql:
        'SELECT uuid, event, properties, timestamp, distinct_id, elements_chain, created_at, event, coalesce(person.properties.email, person.properties.name, ' +
        'person.properties.username, distinct_id), distinct_id, coalesce(properties.$current_url, properties.$screen_name), properties.$lib, timestamp ' +
        "FROM events WHERE timestamp > '2024-01-03 12:00:00.000000' AND timestamp < '2024-01-10 12:00:05.000000' ORDER BY timestamp DESC LIMIT 100",
      is_cached: false,
    });
  });

  test("person and personId: a person's events (by uuid or id), the person as an object", async () => {
    const bob = personOf('bob');
    const person = { uuid: bob.uuid, created_at: isoTimestamp(new Date(bob.createdAt)), properties: bob.properties, distinct_id: 'bob' };
    for (const personId of [bob.uuid, String(bob.id)]) {
      const res = await run({ select: ['person', 'event'], personId, after: 'all', orderBy: ['timestamp DESC'] });
      expect(res.body).toEqual({
        columns: ['person', 'event'],
        types: ['String', 'String'],
        results: [[person, 'purchase'], [person, 'signup']],
        hasMore: false,
        limit: 100,
        offset: 0,
        hogql: `SELECT distinct_id, event FROM events WHERE timestamp < '2024-01-10 12:00:05.000000' AND distinct_id IN ('bob') ORDER BY timestamp DESC LIMIT 100`,
        is_cached: false,
      });
    }
    const unknown = await run({ select: ['event'], personId: '999999', after: 'all' });
    expect(unknown.body.results).toEqual([]);
  });

  test('aggregates: grouped by the other columns, an aggregate where entry filters groups', async () => {
    const res = await run({ select: ['event', 'count() AS n'], where: ['n >= 1', 'count() > 0'], after: 'all', orderBy: ['n DESC', 'event'], limit: 2, offset: 1 });
    expect(res.body).toEqual({
      columns: ['event', 'n'],
      types: ['String', 'UInt64'],
      results: [['$autocapture', 1], ['$identify', 1]],
      hasMore: true,
      limit: 2,
      offset: 1,
      hogql:
        "SELECT event, count() AS n FROM events WHERE timestamp < '2024-01-10 12:00:05.000000' GROUP BY event HAVING n >= 1 AND count() > 0 ORDER BY n DESC, event ASC LIMIT 2 OFFSET 1",
      is_cached: false,
    });
  });

  test('only the project asked for', async () => {
    const query = { select: ['event', 'distinct_id'], after: 'all', where: ['1 = 1 OR 1 = 1'] };
    expect((await run(query, { projectId: f.projectC })).body.results).toEqual([['$pageview', 'carol']]);
    expect((await run(query, { projectId: f.other.projectId, key: f.other.key })).body.results).toEqual([['secret', 'eve']]);
    const res = await run(query, { key: f.other.key });
    expect(res.status).toBe(404);
    expect(res.body).toEqual(NOT_FOUND);
  });

  test.each([
    [{ select: ['event'], where: ["event = 'x' AND"] }, 'where', 'Unexpected end of expression at position 15 of where[0]'],
    [{ select: ['event', 'team_id'] }, 'select', "Unknown field 'team_id' at position 0 of select[1]"],
    [{ select: ['event'], orderBy: ['timestamp DESC; DROP TABLE events'] }, 'orderBy', "Unexpected character ';' at position 14 of orderBy[0]"],
    [{ select: ['event'], after: 'soon' }, 'after', "Invalid date 'soon': use ISO 8601 or a relative date such as -7d, -24h or -1m"],
    [{ where: ['1 = 1'] }, 'query__select', "Property 'query.select' is missing"],
    [{ select: ['event'], limit: 'ten' }, 'query__limit', expect.any(String)],
  ])('400 naming the entry: %j', async (query, attr, detail) => {
    const res = await run(query);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(errorOf('invalid_input', 'validation_error', detail as string, attr));
  });
});

describe('OpenAPI', () => {
  test('documents both query kinds and both answers from their schemas', async () => {
    const spec = (await f.t.json('GET', '/swagger/json')).body;
    const post = spec.paths['/api/projects/{project_id}/query/'].post;
    const kinds = post.requestBody.content['application/json'].schema.properties.query.anyOf.map((s: { properties: { kind: { const: string } } }) => s.properties.kind.const);
    expect(kinds).toEqual(['HogQLQuery', 'EventsQuery']);
    const eventsQuery = post.requestBody.content['application/json'].schema.properties.query.anyOf[1];
    expect(Object.keys(eventsQuery.properties)).toEqual([
      'kind', 'select', 'where', 'orderBy', 'event', 'events', 'properties', 'fixedProperties', 'after', 'before', 'limit', 'offset', 'personId', 'filterTestAccounts', 'actionId',
    ]);
    expect(post.responses['200'].content['application/json'].schema.anyOf.map((s: { description: string }) => s.description)).toEqual([
      "PostHog's HogQLQueryResponse.", "PostHog's EventsQueryResponse.",
    ]);
  });
});
