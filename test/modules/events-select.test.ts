import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { DUCKDB_LIMITS, WHOLE_SECONDS } from '../helpers/duckdb-only';
import { errorOf } from '../helpers/test-app';
import { byKey, openEventsFixture, relative, type EventsFixture } from './events-fixture';

let f: EventsFixture;
beforeAll(async () => {
  f = await openEventsFixture();
});
afterAll(() => f.close());

const select = (expressions: string[], extra: Record<string, string> = {}) => f.list({ select: JSON.stringify(expressions), ...extra });
const invalid = (detail: string, attr: string) => errorOf('invalid_input', 'validation_error', detail, attr);

describe('select and where', () => {
  test('count by event: columns, ClickHouse types, rows as arrays, most frequent first', async () => {
    const { status, body } = await select(['event', 'count()']);
    expect(status).toBe(200);
    expect(body).toEqual({
      columns: ['event', 'count()'],
      types: ['String', 'UInt64'],
      results: [['$pageview', 2], ['$autocapture', 1], ['$identify', 1], ['purchase', 1], ['signup', 1]],
      hasMore: false,
      next: null,
      previous: null,
    });
  });

  test.skipIf(WHOLE_SECONDS.skip)(WHOLE_SECONDS.label('plain columns, newest first, with the default time bounds (the future event is hidden)'), async () => {
    const { body } = await select(['event', 'distinct_id', 'timestamp', 'properties.plan']);
    expect(body.types).toEqual(['String', 'String', "DateTime64(6, 'UTC')", 'Nullable(String)']);
    expect(body.results).toEqual([
      ['$pageview', 'carol', '2024-01-10T11:00:00+00:00', 'enterprise'],
      ['purchase', 'bob', '2024-01-09T12:00:00+00:00', 'pro'],
      ['signup', 'bob', '2024-01-08T12:00:00+00:00', 'free'],
      ['$autocapture', 'alice', '2024-01-07T12:00:00.123000+00:00', null],
      ['$identify', 'alice', '2024-01-06T12:00:00+00:00', null],
      ['$pageview', 'alice-anon', '2024-01-05T12:00:00+00:00', 'pro'],
    ]);
  });

  test('where, aggregates, aliases and grouping', async () => {
    const { body } = await select(['properties.plan AS plan', 'count() AS n', 'sum(toFloat(properties.price))', 'uniq(distinct_id)', 'max(timestamp)'], {
      where: JSON.stringify(['properties.plan IS NOT NULL', "timestamp > '2024-01-04'"]),
    });
    expect(body.columns).toEqual(['plan', 'n', 'sum(toFloat(properties.price))', 'uniq(distinct_id)', 'max(timestamp)']);
    expect(body.results).toEqual([
      ['pro', 2, 110, 2, '2024-01-09T12:00:00+00:00'],
      ['enterprise', 1, null, 1, '2024-01-10T11:00:00+00:00'],
      ['free', 1, 25.5, 1, '2024-01-08T12:00:00+00:00'],
    ]);
  });

  test('an aggregate condition in where becomes HAVING', async () => {
    const { body } = await select(['distinct_id', 'count()'], { where: JSON.stringify(['count() > 1']) });
    expect(body.results).toEqual([['alice', 2], ['bob', 2]]);
  });

  test('person properties join the persons', async () => {
    const { body } = await select(['person.properties.email', 'count()'], { where: JSON.stringify(["person.properties.email LIKE '%@example.com'"]) });
    expect(body.results).toEqual([['alice@example.com', 3]]);
  });

  test('functions: toDate, toStartOfDay, lower, match, in, interval arithmetic', async () => {
    const { body } = await select(['toDate(timestamp) AS day', 'count()'], {
      where: JSON.stringify(['timestamp > now() - interval 2 day', "lower(event) IN ('$pageview', 'purchase')", "match(distinct_id, '^(bob|carol)$')"]),
      orderBy: '["day"]',
    });
    expect(body.types).toEqual(['Date', 'UInt64']);
    expect(body.results).toEqual([['2024-01-09', 1], ['2024-01-10', 1]]);
  });

  test('the filters of the list apply too', async () => {
    const { body } = await select(['event'], { distinct_id: 'bob', after: '-36h' });
    expect(body.results).toEqual([['purchase']]);
  });

  test('orderBy names select entries; limit and offset page with hasMore and links', async () => {
    const first = await select(['event', 'count()'], { orderBy: '["event"]', limit: '2' });
    expect(first.body.results).toEqual([['$autocapture', 1], ['$identify', 1]]);
    expect(first.body.hasMore).toBe(true);
    const next = new URL(first.body.next);
    expect(next.searchParams.get('offset')).toBe('2');
    expect(next.searchParams.get('before')).toBe('2024-01-10T12:00:05.000000Z');
    const second = await f.t.json('GET', relative(first.body.next));
    expect(second.body.results).toEqual([['$pageview', 2], ['purchase', 1]]);
    expect(second.body.previous).toBe(
      `http://test.local/api/projects/${f.projectId}/events/?select=%5B%22event%22%2C%22count%28%29%22%5D&orderBy=%5B%22event%22%5D&limit=2&before=2024-01-10T12%3A00%3A05.000000Z`,
    );
    const desc = await select(['event', 'count()'], { orderBy: '["-count()", "event"]', limit: '1' });
    expect(desc.body.results).toEqual([['$pageview', 2]]);
  });

  test('repeated select parameters are one expression each', async () => {
    const { body } = await f.list("select=event&select=count()&where=event = 'signup'&where=distinct_id = 'bob'");
    expect(body.results).toEqual([['signup', 1]]);
  });

  test('an empty select is no select (PostHog: a falsy list)', async () => {
    const { body } = await select([]);
    expect(body.count).toBe(6);
  });

  test('* is not a column here: a 400 with its position', async () => {
    const { status, body } = await select(['*']);
    expect(status).toBe(400);
    expect(body.attr).toBe('select');
  });

  test.each([
    ['select', { select: '["event +"]' }],
    ['select', { select: '["nope(event)"]' }],
    ['select', { select: '["team_id"]' }],
    ['select', { select: 'event' }],
    ['where', { select: '["event"]', where: '["event"]' }],
    ['where', { select: '["event"]', where: '["count() > 1"]' }],
    ['orderBy', { select: '["event"]', orderBy: '["distinct_id"]' }],
  ] as const)('a bad %s is a 400 naming it, with the position when parsing fails', async (attr, query) => {
    const { status, body } = await f.list(query as Record<string, string>);
    expect(status).toBe(400);
    expect(body.attr).toBe(attr);
    expect(body.type).toBe('validation_error');
  });

  test('a parse error names the position', async () => {
    const { body } = await select(['event', 'count(']);
    expect(body).toEqual(invalid(expect.stringContaining('at position 6 of select[1]') as unknown as string, 'select'));
  });

  test('rows are capped at QUERY_MAX_ROWS', async () => {
    const g = await openEventsFixture({ QUERY_MAX_ROWS: '2' });
    try {
      const { body } = await g.list({ select: '["event"]', limit: '100' });
      expect(body.results.length).toBe(2);
      expect(body.hasMore).toBe(true);
      expect((await g.list({ select: '["event"]', offset: '3' })).status).toBe(400);
    } finally {
      await g.close();
    }
  });

  test.skipIf(DUCKDB_LIMITS.skip)(DUCKDB_LIMITS.label('a value DuckDB cannot represent is a 400, not a 500'), async () => {
    const token = f.t.account.project.apiToken;
    const e = { event: 'odd', distinct_id: 'odd', timestamp: byKey('a6').timestamp, properties: { when: 'infinity', far: '290000-01-01' }, uuid: crypto.randomUUID() };
    await f.ingest(token, [e]);
    for (const expression of ['toDateTime(properties.when)', 'toDateTime(properties.far) + interval 9999 year']) {
      const { status, body } = await select([expression], { event: 'odd' });
      expect(status).toBe(400);
      expect(body.code).toBe('invalid_input');
      expect(body.attr).toBe('select');
      expect(body.detail).not.toContain('SELECT');
    }
  });
});
