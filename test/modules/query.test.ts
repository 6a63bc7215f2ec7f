import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { isoTimestamp } from '../../src/modules/events/event-object';
import { errorOf, NOT_AUTHENTICATED, NOT_FOUND } from '../helpers/test-app';
import { byKey, openEventsFixture, type EventsFixture } from './events-fixture';

let f: EventsFixture;
/** The same events with a row cap of 3 and a 100 ms time limit. */
let small: EventsFixture;
beforeAll(async () => {
  [f, small] = await Promise.all([openEventsFixture(), openEventsFixture({ QUERY_MAX_ROWS: '3', QUERY_TIMEOUT_MS: '100' })]);
});
afterAll(async () => {
  await f.close();
  await small.close();
});

const path = (projectId: number | string) => `/api/projects/${projectId}/query/`;
const run = (query: string, values?: unknown, options: { fixture?: EventsFixture; projectId?: number; key?: string } = {}) => {
  const fixture = options.fixture ?? f;
  const body = { query: { kind: 'HogQLQuery', query, ...(values === undefined ? {} : { values }) } };
  return fixture.t.json('POST', path(options.projectId ?? fixture.projectId), { body, key: options.key });
};
const answer = (query: string, columns: Array<[string, string]>, results: unknown[][], extra: Record<string, unknown> = {}) => ({
  columns: columns.map(([c]) => c),
  types: columns,
  results,
  hasMore: false,
  limit: 100,
  offset: 0,
  hogql: query,
  is_cached: false,
  ...extra,
});
const invalid = (detail: string, attr: string | null = 'query') => errorOf('invalid_input', 'validation_error', detail, attr);

describe('POST /query/ with a HogQLQuery', () => {
  test('count by event: columns, [column, type] pairs, rows as arrays', async () => {
    const query = 'SELECT event, count() FROM events GROUP BY event ORDER BY count() DESC, event';
    const res = await run(query);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(
      answer(query, [['event', 'String'], ['count()', 'UInt64']], [['$pageview', 3], ['$autocapture', 1], ['$identify', 1], ['purchase', 1], ['signup', 1]]),
    );
  });

  test('placeholders from values, timestamps as the events API writes them', async () => {
    const query = 'SELECT event AS name, timestamp FROM events WHERE distinct_id = {who} AND event IN {names} ORDER BY timestamp';
    const res = await run(query, { who: 'bob', names: ['signup', 'purchase', 'other'] });
    expect(res.body).toEqual(
      answer(query, [['name', 'String'], ['timestamp', "DateTime64(6, 'UTC')"]], [['signup', '2024-01-08T12:00:00+00:00'], ['purchase', '2024-01-09T12:00:00+00:00']]),
    );
  });

  test("person properties: the events' persons, merged ones included", async () => {
    const query = 'SELECT person.properties.email AS email, count() FROM events GROUP BY email ORDER BY email';
    const res = await run(query);
    expect(res.body).toEqual(answer(query, [['email', 'Nullable(String)'], ['count()', 'UInt64']], [['alice@example.com', 3], [null, 4]]));
  });

  test("persons: a project's persons, one row per distinct id with pdi.distinct_id", async () => {
    const query = 'SELECT properties.email, is_identified, pdi.distinct_id FROM persons ORDER BY pdi.distinct_id';
    const res = await run(query);
    expect(res.status).toBe(200);
    expect(res.body).toEqual(
      answer(query, [['properties.email', 'Nullable(String)'], ['is_identified', 'UInt8'], ['pdi.distinct_id', 'String']], [
        ['alice@example.com', true, 'alice'],
        ['alice@example.com', true, 'alice-anon'],
        [null, false, 'bob'],
        [null, false, 'carol'],
      ]),
    );
  });

  test('persons: id and created_at as the persons API has them; each project its own', async () => {
    await f.t.deps.storage.persons.ensureLoaded(f.projectId);
    const bob = f.t.deps.storage.persons.findByDistinctId(f.projectId, 'bob')!;
    const query = 'SELECT id, created_at FROM persons WHERE id = {id}';
    const res = await run(query, { id: bob.uuid });
    expect(res.body).toEqual(answer(query, [['id', 'String'], ['created_at', "DateTime64(6, 'UTC')"]], [[bob.uuid, isoTimestamp(new Date(bob.createdAt))]]));
    const count = 'SELECT count() FROM persons';
    expect((await run(count)).body.results).toEqual([[3]]);
    expect((await run(count, undefined, { projectId: f.projectC })).body.results).toEqual([[1]]);
    expect((await run(count, undefined, { projectId: f.other.projectId, key: f.other.key })).body.results).toEqual([[1]]);
  });

  test("events: the event's person, by PostHog's names (events.person.*)", async () => {
    const query = "SELECT event, events.person.properties.email, person.is_identified, person.created_at FROM events WHERE distinct_id IN ('alice-anon', 'bob') ORDER BY timestamp";
    const res = await run(query);
    await f.t.deps.storage.persons.ensureLoaded(f.projectId);
    const created = (id: string) => isoTimestamp(new Date(f.t.deps.storage.persons.findByDistinctId(f.projectId, id)!.createdAt));
    expect(res.body).toEqual(
      answer(
        query,
        [['event', 'String'], ['events.person.properties.email', 'Nullable(String)'], ['person.is_identified', 'Nullable(UInt8)'], ['person.created_at', "Nullable(DateTime64(6, 'UTC'))"]],
        [
          ['$pageview', 'alice@example.com', true, created('alice')],
          ['signup', null, false, created('bob')],
          ['purchase', null, false, created('bob')],
        ],
      ),
    );
  });

  test('events: person.is_identified alone brings the persons in', async () => {
    const query = 'SELECT person.is_identified AS identified, count() FROM events GROUP BY identified ORDER BY identified';
    const res = await run(query);
    expect(res.body).toEqual(answer(query, [['identified', 'Nullable(UInt8)'], ['count()', 'UInt64']], [[false, 4], [true, 3]]));
  });

  test('LIMIT and OFFSET: one page, and whether there is more', async () => {
    const query = 'SELECT uuid FROM events ORDER BY timestamp LIMIT 2 OFFSET 1';
    const res = await run(query);
    expect(res.body).toEqual(answer(query, [['uuid', 'String']], [[byKey('a2').uuid], [byKey('a3').uuid]], { hasMore: true, limit: 2, offset: 1 }));
  });

  test('only the project asked for: other projects and organizations stay out', async () => {
    const query = "SELECT event, count() FROM events WHERE event = 'secret' OR 1 = 1 GROUP BY event ORDER BY event";
    expect((await run(query)).body.results.map((r: unknown[]) => r[0])).toEqual(['$autocapture', '$identify', '$pageview', 'purchase', 'signup']);
    expect((await run(query, undefined, { projectId: f.projectC })).body.results).toEqual([['$pageview', 1]]);
    expect((await run(query, undefined, { projectId: f.other.projectId, key: f.other.key })).body.results).toEqual([['secret', 1]]);
    for (const projectId of [f.projectId, f.projectC]) {
      const res = await run(query, undefined, { projectId, key: f.other.key });
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    }
  });

  test('the row cap bounds LIMIT and the default alike', async () => {
    for (const query of ['SELECT uuid FROM events ORDER BY timestamp', 'SELECT uuid FROM events ORDER BY timestamp LIMIT 1000']) {
      const res = await run(query, undefined, { fixture: small });
      expect(res.body).toEqual(answer(query, [['uuid', 'String']], ['a1', 'a2', 'a3'].map((k) => [byKey(k).uuid]), { hasMore: true, limit: 3 }));
    }
  });

  test('a query past the time limit is a 504', async () => {
    const store = small.t.deps.storage.events;
    const original = store.streamQuery;
    const stalled: AsyncIterableIterator<never> = {
      next: () => new Promise(() => undefined),
      return: async () => ({ value: undefined, done: true }),
      [Symbol.asyncIterator]: () => stalled,
    };
    store.streamQuery = () => stalled;
    try {
      const res = await run('SELECT uuid FROM events', undefined, { fixture: small });
      expect(res.status).toBe(504);
      expect(res.body).toEqual(
        errorOf('query_timeout', 'server_error', 'The query did not finish within 100 ms. Narrow it down (a time range, fewer events) and retry.'),
      );
    } finally {
      store.streamQuery = original;
    }
  });

  test.each([
    ['SELECT event FROM events WHERE', undefined, invalid('Unexpected end of expression at position 30 of query')],
    ['SELECT team_id FROM events', undefined, invalid("Unknown field 'team_id' at position 7 of query")],
    ['SELECT uuid FROM events WHERE uuid IN (SELECT uuid FROM events)', undefined, invalid("Unsupported keyword 'SELECT' at position 39 of query")],
    ['SELECT uuid FROM events; DELETE FROM events', undefined, invalid("Unexpected character ';' at position 23 of query")],
    ['SELECT event, timestamp FROM events GROUP BY event', undefined, invalid('Expression must be in GROUP BY or inside an aggregate function at position 14 of query')],
    ['SELECT uuid FROM events WHERE event = {x}', undefined, invalid('Placeholder {x} has no value in values at position 38 of query')],
    ['SELECT uuid FROM events WHERE event = {x}', { x: { nested: 1 } }, invalid('values.x must be a string, number, boolean or null, or a list of them', 'values')],
  ])('400 with the position: %s %j', async (query, values, expected) => {
    const res = await run(query, values);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(expected);
  });

  test('other query kinds and malformed bodies are 400s', async () => {
    const kind = await f.t.json('POST', path(f.projectId), { body: { query: { kind: 'TrendsQuery', query: 'x' } } });
    expect(kind.status).toBe(400);
    expect(kind.body).toEqual(invalid('Unsupported query kind: TrendsQuery', 'kind'));
    const missing = await f.t.json('POST', path(f.projectId), { body: { query: { kind: 'HogQLQuery' } } });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual(invalid(expect.any(String) as unknown as string, 'query__query'));
  });

  test('without a key: 401; an unknown project: 404', async () => {
    const anonymous = await f.t.json('POST', path(f.projectId), { body: { query: { kind: 'HogQLQuery', query: 'SELECT 1' } }, key: null });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual(NOT_AUTHENTICATED);
    const unknown = await run('SELECT uuid FROM events', undefined, { projectId: 999_999 });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(NOT_FOUND);
  });
});

describe('OpenAPI', () => {
  test('documents the query and property-definition routes from their schemas', async () => {
    const spec = (await f.t.json('GET', '/swagger/json')).body;
    const query = spec.paths['/api/projects/{project_id}/query/'].post;
    expect(Object.keys(query.responses).sort()).toEqual(['200', '400', '401', '404', '503', '504']);
    expect(Object.keys(query.requestBody.content['application/json'].schema.properties)).toEqual(['query', 'client_query_id', 'refresh']);
    const definitions = spec.paths['/api/projects/{project_id}/property_definitions/'].get;
    expect(definitions.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['type', 'event_names', 'filter_by_event_names', 'search']));
    expect(Object.keys(spec.paths['/api/projects/{project_id}/property_definitions/{id}/'])).toEqual(expect.arrayContaining(['get', 'patch']));
  });
});
