import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { uuidv7 } from '../../src/ids';
import { openClickHouse, parseClickHouseUrl, type ClickHouse } from '../../src/storage/clickhouse/client';
import { migrateClickHouse } from '../../src/storage/clickhouse/schema';
import { CLICKHOUSE_SKIP_REASON, chdbClient, clickhouseServerAvailable, clickhouseServerUrl, testDatabaseName } from '../helpers/clickhouse';
import { createTestApp, type TestApp } from '../helpers/test-app';

/**
 * Cohorts defined by events, calculated with the events in ClickHouse (EVENTS_STORE: each app's
 * embedded store loads them there), give the answers the DuckDB store gives for the same events:
 * the cohort, its persons, and a flag on it. On chDB (modern ClickHouse) and on Debian's 18.16.
 * `now` has a fraction of a second and some events lie a millisecond either side of a window's
 * ends, where 18.16's whole-second times would decide wrongly if compared by the seconds alone.
 */

const NOW = new Date('2024-03-01T12:00:00.500Z');
const DAY = 86_400_000;
const ago = (ms: number) => new Date(NOW.getTime() - ms);

type Sent = { event: string; distinct_id: string; timestamp: Date; properties?: Record<string, unknown> };
const identify = (distinctId: string, set: Record<string, unknown>, anon?: string): Sent => ({
  event: '$identify', distinct_id: distinctId, timestamp: ago(60 * DAY), properties: { $set: set, ...(anon ? { $anon_distinct_id: anon } : {}) },
});

const EVENTS: Sent[] = [
  identify('alice', { email: 'alice@example.com', plan: 'pro' }, 'alice-anon'),
  identify('bob', { email: 'bob@test.org', plan: 'free' }),
  identify('carol', { name: 'Carol', plan: 'pro' }),
  identify('dave', { plan: 'free' }),
  identify('erin', {}),
  // Alice's pageviews are under two distinct ids: her count is their sum.
  { event: '$pageview', distinct_id: 'alice-anon', timestamp: ago(DAY) },
  { event: '$pageview', distinct_id: 'alice-anon', timestamp: ago(3 * DAY) },
  { event: '$pageview', distinct_id: 'alice', timestamp: ago(2 * DAY) },
  { event: '$pageview', distinct_id: 'bob', timestamp: ago(10 * DAY) },
  { event: 'purchase', distinct_id: 'carol', timestamp: ago(2 * DAY), properties: { amount: 5 } },
  { event: 'purchase', distinct_id: 'carol', timestamp: ago(3 * DAY), properties: { amount: 50 } },
  { event: 'purchase', distinct_id: 'dave', timestamp: ago(40 * DAY), properties: { amount: 500 } },
  // The ends of "the last 7 days": its first instant and now are in, a millisecond outside is not.
  { event: 'edge', distinct_id: 'dave', timestamp: ago(7 * DAY) },
  { event: 'edge', distinct_id: 'erin', timestamp: ago(7 * DAY + 1) },
  { event: 'edge', distinct_id: 'bob', timestamp: NOW },
  { event: 'edge', distinct_id: 'carol', timestamp: new Date(NOW.getTime() + 1) },
];

const behavioral = (key: string, days: number, extra: Record<string, unknown> = {}) => ({ type: 'behavioral', value: 'performed_event', key, event_type: 'events', time_value: days, time_interval: 'day', ...extra });
const filtersOf = (...values: Record<string, unknown>[]) => ({ properties: { type: 'AND', values } });

/** Cohorts created in this order in every app (their ids match); `R(n)` refers to the n-th. */
const COHORTS: Array<[string, Record<string, unknown>]> = [
  ['performed $pageview in the last 7 days', { filters: filtersOf(behavioral('$pageview', 7)) }],
  ['performed $pageview in the last 30 days', { filters: filtersOf(behavioral('$pageview', 30)) }],
  ['did not purchase in the last week', { filters: filtersOf({ ...behavioral('purchase', 1, { time_interval: 'week' }), negation: true }) }],
  ['$pageview at least twice (over two distinct ids)', { filters: filtersOf(behavioral('$pageview', 30, { value: 'performed_event_multiple', operator: 'gte', operator_value: 2 })) }],
  ['$pageview exactly three times (two under one distinct id, one under another)', { filters: filtersOf(behavioral('$pageview', 30, { value: 'performed_event_multiple', operator: 'exact', operator_value: 3 })) }],
  ['$pageview exactly once', { filters: filtersOf(behavioral('$pageview', 30, { value: 'performed_event_multiple', operator: 'exact', operator_value: 1 })) }],
  ['purchase with an event property filter', { filters: filtersOf(behavioral('purchase', 7, { event_filters: [{ key: 'amount', operator: 'gt', value: 10, type: 'event' }] })) }],
  ['the window ends, to the millisecond', { filters: filtersOf(behavioral('edge', 7)) }],
  ['events and person properties, OR', { filters: { properties: { type: 'OR', values: [{ type: 'AND', values: [behavioral('$pageview', 30), { type: 'person', key: 'plan', operator: 'exact', value: 'free' }] }, behavioral('purchase', 60)] } } }],
  ['legacy groups with an event', { groups: [{ properties: [{ key: 'email', value: 'bob@test.org', type: 'person' }] }, { event_id: 'purchase', days: 7 }] }],
  ['another cohort, or an event', { filters: { properties: { type: 'OR', values: [{ type: 'cohort', key: 'id', value: 'R(1)' }, behavioral('edge', 1)] } } }],
  ['did not perform an event nobody performed (no counts at all)', { filters: filtersOf({ ...behavioral('never', 30), negation: true }) }],
];

const URL = '/api/projects/@current/cohorts/';
/** The same uuids in every app (a person's `$creator_event_uuid` shows them). */
const BATCH = EVENTS.map((e) => ({ ...e, timestamp: e.timestamp.toISOString(), uuid: uuidv7(e.timestamp.getTime()), properties: e.properties ?? {} }));

async function openApp(ch: ClickHouse | null): Promise<TestApp> {
  const t = await createTestApp({}, () => NOW, undefined, {}, ch ? { eventsStore: ch } : {});
  const res = await t.call('POST', '/batch/', { key: null, body: { api_key: t.account.project.apiToken, batch: BATCH } });
  expect(res.status).toBe(200);
  const ids: number[] = [];
  for (const [, body] of COHORTS) {
    const resolved = JSON.parse(JSON.stringify(body).replace(/"R\((\d+)\)"/g, (_, n: string) => String(ids[Number(n) - 1])));
    const created = await t.json('POST', URL, { body: { name: 'case', ...resolved } });
    expect(created.status).toBe(201);
    ids.push(created.body.id);
    // A cohort of a cohort reads the other's current members: calculated one after another.
    await t.deps.storage.cohorts.whenIdle();
  }
  const flag = await t.json('POST', '/api/projects/@current/feature_flags/', { body: { key: 'twice', filters: { groups: [{ properties: [{ key: 'id', type: 'cohort', value: ids[3] }] }] } } });
  expect(flag.status).toBe(201);
  return t;
}

/** What differs between two apps by construction: the user who created a cohort, and persons' random uuids. */
const comparable = (body: unknown): unknown =>
  JSON.parse(JSON.stringify(body), (key, value) => (key === 'created_by' || key === 'uuid' ? null : value));

/** A cohort's answers: itself, its persons, and a flag on the fourth for each person. */
async function answers(t: TestApp, n: number) {
  const cohorts = (await t.json('GET', `${URL}?limit=100`)).body.results as Array<{ id: number }>;
  const id = [...cohorts].sort((a, b) => a.id - b.id)[n]!.id;
  const cohort = await t.json('GET', `${URL}${id}/`);
  const persons = await t.json('GET', `${URL}${id}/persons/`);
  return comparable({ cohort: cohort.body, persons: persons.body });
}

async function flagFor(t: TestApp, distinctId: string) {
  const res = await t.json('POST', '/flags/?v=2', { key: null, body: { token: t.account.project.apiToken, distinct_id: distinctId } });
  return { status: res.status, enabled: res.body.flags?.twice?.enabled, reason: res.body.flags?.twice?.reason?.code };
}

const engines: Array<{ name: string; available: boolean; reason: string; open: () => Promise<ClickHouse> }> = [
  { name: 'chDB (modern)', available: true, reason: '', open: async () => openClickHouse({ client: await chdbClient(), database: testDatabaseName() }) },
  { name: 'ClickHouse 18.16 server', available: clickhouseServerAvailable, reason: CLICKHOUSE_SKIP_REASON, open: async () => openClickHouse(parseClickHouseUrl(await clickhouseServerUrl())) },
];

let duck: TestApp;
beforeAll(async () => {
  duck = await openApp(null);
});
afterAll(async () => {
  await duck?.close();
});

test('the DuckDB reference answers what the definitions say', async () => {
  const members = async (n: number) => ((await answers(duck, n)) as { persons: { results: Array<{ name: string }> } }).persons.results.map((p) => p.name).sort();
  expect(await members(0)).toEqual(['alice@example.com']);
  expect(await members(2)).toEqual(['alice@example.com', 'bob@test.org', 'dave', 'erin']);
  expect(await members(3)).toEqual(['alice@example.com']);
  expect(await members(4)).toEqual(['alice@example.com']);
  expect(await members(5)).toEqual(['bob@test.org']);
  expect(await members(6)).toEqual(['Carol']);
  expect(await members(7)).toEqual(['bob@test.org', 'dave']);
  expect(await members(8)).toEqual(['Carol', 'bob@test.org', 'dave']);
  expect(await members(10)).toEqual(['alice@example.com', 'bob@test.org']);
  expect(await members(11)).toEqual(['Carol', 'alice@example.com', 'bob@test.org', 'dave', 'erin']);
});

for (const engine of engines) {
  const run = engine.available ? describe : describe.skip;
  run(`behavioural cohorts with the events in ClickHouse: ${engine.name}${engine.available ? '' : ` (skipped: ${engine.reason})`}`, () => {
    let ch: ClickHouse;
    let t: TestApp;
    beforeAll(async () => {
      ch = await engine.open();
      await migrateClickHouse(ch);
      t = await openApp(ch);
    });
    afterAll(async () => {
      await t?.close();
      await ch?.close();
    });

    test.each(COHORTS.map(([name], i) => [name, i] as const))('%s: the cohort and its persons as DuckDB answers them', async (_name, n) => {
      const expected = await answers(duck, n);
      expect((expected as { cohort: { errors_calculating: number } }).cohort.errors_calculating).toBe(0);
      expect(await answers(t, n)).toEqual(expected);
    });

    test('a flag on a behavioural cohort decides as on DuckDB', async () => {
      for (const distinctId of ['alice', 'alice-anon', 'bob', 'carol']) {
        const expected = await flagFor(duck, distinctId);
        expect(expected.status).toBe(200);
        expect(await flagFor(t, distinctId)).toEqual(expected);
      }
      expect((await flagFor(t, 'alice')).enabled).toBe(true);
      expect((await flagFor(t, 'bob')).enabled).toBe(false);
    });
  });
}
