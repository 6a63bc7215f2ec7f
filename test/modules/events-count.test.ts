import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { uuidv7 } from '../../src/ids';
import { A_EVENTS, NOW, openEventsFixture, recordStatements, type EventsFixture, type FixtureEvent } from './events-fixture';

/**
 * `count` over Parquet files: files wholly inside the bounds are counted from the manifest (or
 * once per filter), the rest is scanned. Every case checks the count against the listed rows
 * (all of them fit on one page), with bounds that cut through a day's file and bounds finer than
 * a millisecond.
 */
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const a4 = A_EVENTS.find((e) => e.key === 'a4')!;
const at = (ms: number) => new Date(a4.timestamp.getTime() + ms);
const extra = (key: string, event: string, timestamp: Date): FixtureEvent => ({ key, event, distinct_id: 'dora', timestamp, properties: { plan: 'pro' }, uuid: uuidv7(timestamp.getTime()) });
// Beside a4 in its day's file (a4 is at 12:00 UTC): one before it, one after.
const X = [extra('x1', 'signup', at(-2 * HOUR)), extra('x2', '$pageview', at(HOUR))];
const ALL = [...A_EVENTS, ...X];

let f: EventsFixture;
beforeAll(async () => {
  f = await openEventsFixture();
  await f.ingest(f.t.account.project.apiToken, X);
  await f.t.deps.storage.events.compact();
  expect(f.t.deps.storage.events.stats().parquetFiles).toBeGreaterThan(0);
});
afterAll(() => f.close());

const iso = (d: Date) => d.toISOString();
const visible = (e: FixtureEvent) => e.timestamp.getTime() < NOW.getTime() + 5_000;

async function expectCount(query: Record<string, string>, expected: FixtureEvent[]) {
  const { status, body } = await f.list({ ...query, limit: '1000' });
  expect(status).toBe(200);
  const ids = new Set(expected.map((e) => e.uuid));
  expect(body.results.map((r: { id: string }) => r.id).sort()).toEqual([...ids].sort());
  expect(body.count).toBe(expected.length);
  // `select=["count()"]` with the same filters: the same total.
  const counted = await f.list({ ...query, select: JSON.stringify(['count()']) });
  expect(counted.status).toBe(200);
  expect(counted.body).toEqual({ columns: ['count()'], types: ['UInt64'], results: [[expected.length]], hasMore: false, next: null, previous: null });
}

describe('count over Parquet files', () => {
  test.each([
    ['no filter', {}, (e: FixtureEvent) => visible(e)],
    ['event', { event: '$pageview' }, (e: FixtureEvent) => visible(e) && e.event === '$pageview'],
    ['distinct_id', { distinct_id: 'dora' }, (e: FixtureEvent) => e.distinct_id === 'dora'],
    ['a property', { properties: JSON.stringify([{ key: 'plan', value: 'pro' }]) }, (e: FixtureEvent) => visible(e) && e.properties.plan === 'pro'],
    ['after cutting through a file', { after: iso(at(-HOUR)) }, (e: FixtureEvent) => visible(e) && e.timestamp > at(-HOUR)],
    ['before cutting through a file', { before: iso(at(30 * 60_000)) }, (e: FixtureEvent) => e.timestamp < at(30 * 60_000)],
    ['after exactly at a row (exclusive)', { after: iso(a4.timestamp) }, (e: FixtureEvent) => visible(e) && e.timestamp > a4.timestamp],
    ['before exactly at a row (exclusive)', { before: iso(a4.timestamp) }, (e: FixtureEvent) => e.timestamp < a4.timestamp],
    ['before half a millisecond past a row', { before: `${iso(a4.timestamp).slice(0, 23)}500Z` }, (e: FixtureEvent) => e.timestamp <= a4.timestamp],
    ['after half a millisecond past a row', { after: `${iso(a4.timestamp).slice(0, 23)}500Z` }, (e: FixtureEvent) => visible(e) && e.timestamp > a4.timestamp],
    ['both bounds around whole days', { after: iso(at(-1.5 * DAY)), before: iso(at(1.5 * DAY)), event: 'purchase' }, (e: FixtureEvent) => e.event === 'purchase' && e.timestamp > at(-1.5 * DAY) && e.timestamp < at(1.5 * DAY)],
  ])('%s', async (_name, query, keep) => {
    // Twice: the second count comes from what the first remembered per file.
    await expectCount(query, ALL.filter(keep));
    await expectCount(query, ALL.filter(keep));
  });

  test('select=["count()"] over files wholly inside the bounds reads their counts from the manifest, not their rows', async () => {
    const { statements, restore } = recordStatements(f);
    try {
      const counted = await f.list({ select: JSON.stringify(['count()']), before: '2030-01-01T00:00:00Z' });
      expect(counted.body.results).toEqual([[ALL.length]]);
    } finally {
      restore();
    }
    expect(statements.length).toBeGreaterThan(0);
    expect(statements.filter((s) => s.includes('read_parquet'))).toEqual([]);
  });

  test('remembered counts stay exact as events arrive and are compacted', async () => {
    const query = { event: '$pageview' };
    const keep = (e: FixtureEvent) => visible(e) && e.event === '$pageview';
    await expectCount(query, ALL.filter(keep));
    const late = [extra('y1', '$pageview', at(-30 * 60_000)), extra('y2', 'other', at(-20 * 60_000))];
    await f.ingest(f.t.account.project.apiToken, late);
    await expectCount(query, [...ALL, ...late].filter(keep));
    await f.t.deps.storage.events.compact();
    await expectCount(query, [...ALL, ...late].filter(keep));
    await expectCount({ distinct_id: 'dora', event: 'other' }, late.filter((e) => e.event === 'other'));
  });
});

describe('exports over Parquet files', () => {
  test('a limited export is the newest rows, whatever the limit', async () => {
    // With the default bound, today's file (holding a future event) is cut by it; two hours back
    // (an ISO bound and a relative one), every file is whole.
    const cases: Array<Record<string, string>> = [{}, { before: new Date(NOW.getTime() - 2 * HOUR).toISOString() }, { before: '-2h' }];
    for (const bounds of cases) {
      // The listing, checked above against the fixture, gives the order (late arrivals included).
      const newest = ((await f.list({ ...bounds, limit: '1000' })).body.results as Array<{ id: string }>).map((e) => e.id);
      expect(newest.length).toBeGreaterThanOrEqual(7);
      for (let limit = 1; limit <= newest.length + 1; limit++) {
        const res = await f.t.call('GET', f.path({ ...bounds, format: 'json', limit: String(limit) }));
        const ids = ((await res.json()) as { results: Array<{ id: string }> }).results.map((e) => e.id);
        expect(ids).toEqual(newest.slice(0, limit));
        const csv = await (await f.t.call('GET', f.path({ ...bounds, format: 'csv', limit: String(limit) }))).text();
        expect(csv.trimEnd().split('\r\n').length - 1).toBe(Math.min(limit, newest.length));
      }
    }
  });
});
