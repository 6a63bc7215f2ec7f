import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { StoredEventRow } from '../../src/core/events/columns';
import { sql, trusted } from '../../src/core/query';
import { AppError } from '../../src/errors';
import type { EventReads } from '../../src/storage/events/read/reads';
import { uuidv7 } from '../../src/ids';
import { openClickHouse, parseClickHouseUrl, type ClickHouse } from '../../src/storage/clickhouse/client';
import { insertProcessed } from '../../src/storage/clickhouse/events-table';
import { migrateClickHouse } from '../../src/storage/clickhouse/schema';
import { encodePlacedLines } from '../../src/storage/events/log/row-lines';
import { CLICKHOUSE_SKIP_REASON, chdbClient, clickhouseServerAvailable, clickhouseServerUrl, testDatabaseName } from '../helpers/clickhouse';
import type { TestApp } from '../helpers/test-app';
import { allPages, byKey, CHAIN, NOW, openEventsFixture, relative, VISIBLE, type EventsFixture, type FixtureEvent } from './events-fixture';

/**
 * The events API answered from ClickHouse gives the bodies the DuckDB store gives for the same
 * events. Two apps over the same fixture (ingested through /batch/ into each, so both have the
 * same persons and definitions): the reference reads DuckDB, the other reads a ClickHouse
 * database (`eventReads`) filled with the rows its own event store processed, encoded as the
 * store's log lines and inserted as the ClickHouse writer does (insertProcessed). Every case of
 * the table runs on both and the whole bodies must be equal; on chDB (modern ClickHouse, in
 * process) and on Debian's 18.16 server.
 */

type Call = { method?: 'GET' | 'POST'; path: string; body?: unknown };

/** `P` in a path is the project's events path; `U(key)` an event's uuid. */
const list = (query: Record<string, string>): Call => ({ path: `P?${new URLSearchParams(query)}` });
const props = (filters: unknown) => list({ properties: JSON.stringify(filters) });
const hogql = (query: string): Call => ({ method: 'POST', path: 'Q', body: { query: { kind: 'HogQLQuery', query } } });

const CASES: Array<[string, Call]> = [
  ['the list, newest first', list({})],
  ['limit', list({ limit: '2' })],
  ['offset', list({ limit: '2', offset: '1' })],
  ['ascending', list({ orderBy: JSON.stringify(['timestamp']) })],
  ['event=', list({ event: '$pageview' })],
  ['distinct_id=', list({ distinct_id: 'bob' })],
  ['after and before', list({ after: '2024-01-06T00:00:00Z', before: '2024-01-09T12:00:00Z' })],
  ['before far ahead shows the future event', list({ before: '2030-01-01' })],
  ['exact', props([{ key: 'plan', value: 'pro', operator: 'exact', type: 'event' }])],
  ['exact, a list of values', props([{ key: 'plan', value: ['pro', 'free'] }])],
  ['is_not', props([{ key: 'plan', value: 'pro', operator: 'is_not' }])],
  ['icontains on a hot property', props([{ key: '$current_url', value: 'EXAMPLE.com/B', operator: 'icontains' }])],
  ['regex', props([{ key: 'plan', value: '^(free|ent)', operator: 'regex' }])],
  ['gt on numbers and numeric text', props([{ key: 'price', value: 20, operator: 'gt' }])],
  ['lte', props([{ key: 'price', value: 25.5, operator: 'lte' }])],
  ['is_set', props([{ key: 'tags', operator: 'is_set' }])],
  ['is_not_set', props([{ key: 'plan', operator: 'is_not_set' }])],
  ['a property key that needs quoting', props([{ key: 'quote"d,key', value: 'a,"b"\nc' }])],
  ['a value that tries to leave its literal', props([{ key: 'plan', value: "pro' OR 1=1 --" }])],
  ['a distinct id that tries to leave its literal', list({ distinct_id: "bob\\' OR 1=1 --" })],
  ['AND of ORs', props({ type: 'AND', values: [{ type: 'OR', values: [{ key: 'plan', value: 'pro' }, { key: 'plan', value: 'free' }] }, { key: 'price', value: 10, operator: 'gt' }] })],
  ['filters and event= together', list({ event: '$pageview', properties: JSON.stringify([{ key: 'plan', operator: 'is_set' }]) })],
  ['select with where (a time with milliseconds)', list({ select: JSON.stringify(['event', 'distinct_id', 'timestamp', 'properties.plan']), where: JSON.stringify(["event != '$identify'"]) })],
  ['select aggregates', list({ select: JSON.stringify(['properties.plan AS plan', 'count() AS n', 'sum(toFloat(properties.price))', 'uniq(distinct_id)']), where: JSON.stringify(['properties.plan IS NOT NULL']) })],
  ['select count()', list({ select: JSON.stringify(['count()']) })],
  ['select by day', list({ select: JSON.stringify(['toDate(timestamp) AS day', 'count()']), orderBy: JSON.stringify(['day']) })],
  ['select a boolean', list({ select: JSON.stringify(['event', "properties.plan = 'pro' AS pro"]), limit: '3' })],
  ['select pages', list({ select: JSON.stringify(['event', 'uuid']), limit: '2', offset: '2' })],
  ['event by id', { path: 'P/U(a3)/' }],
  ['event by id, text that needs quoting', { path: 'P/U(a4)/' }],
  ['event by id, unknown', { path: 'P/01a219da-5fd6-7749-8000-000000000001/' }],
  ['values', { path: 'P/values/?key=plan' }],
  ['values of a hot property', { path: 'P/values/?key=%24current_url' }],
  ['values of a number, with a substring', { path: 'P/values/?key=price&value=0' }],
  ['values of custom events', { path: 'P/values/?key=custom_event' }],
  ['values of some events', { path: 'P/values/?key=plan&event_name=%24pageview' }],
  ['HogQL: counts by event', hogql('SELECT event, count() AS n FROM events GROUP BY event ORDER BY n DESC, event')],
  ['HogQL: rows and properties', hogql("SELECT uuid, distinct_id, properties.plan, timestamp FROM events WHERE properties.price > 5 ORDER BY timestamp DESC")],
  ['HogQL: star', hogql('SELECT * FROM events ORDER BY timestamp LIMIT 2')],
  ['HogQL: text that is no number reads NULL', hogql("SELECT toInt(event) + 1, toFloat(properties.price) FROM events WHERE event = 'signup'")],
  ['HogQL: a time with milliseconds', hogql("SELECT timestamp, toStartOfHour(timestamp) FROM events WHERE event = '$autocapture'")],
  // Persons, from the copy the person store keeps beside the events.
  ['a person property filter', props([{ key: 'email', value: 'alice@', operator: 'icontains', type: 'person' }])],
  ['a person property filter, is_not_set (events without a person property)', props([{ key: 'email', operator: 'is_not_set', type: 'person' }])],
  ['a person property filter with an event filter', props([{ key: 'name', value: 'Alice', type: 'person' }, { key: 'plan', operator: 'is_set' }])],
  ['select of a person property', list({ select: JSON.stringify(['person.properties.email', 'count()']), orderBy: JSON.stringify(['person.properties.email']) })],
  ['select of person columns', list({ select: JSON.stringify(['event', 'distinct_id', 'person.properties.name', 'person.is_identified']) })],
  ['where on a person property', list({ select: JSON.stringify(['event', 'distinct_id']), where: JSON.stringify(["person.properties.email = 'alice@example.com'"]) })],
  ['HogQL: person properties on events', hogql('SELECT distinct_id, person.properties.email, person.properties.name FROM events ORDER BY timestamp')],
  ['HogQL over persons', hogql('SELECT properties.email, is_identified, created_at FROM persons ORDER BY created_at')],
  ['select of the person\'s properties whole', list({ select: JSON.stringify(['distinct_id', 'person.properties']), orderBy: JSON.stringify(['distinct_id']) })],
  ['HogQL: persons\' properties whole', hogql('SELECT properties FROM persons ORDER BY created_at')],
  ['HogQL over persons and their distinct ids', hogql('SELECT pdi.distinct_id, properties.email FROM persons ORDER BY pdi.distinct_id')],
];

/** What ClickHouse cannot answer yet: a 400 that says so (DuckDB answers 200). */
const UNSUPPORTED: Array<[string, Call, string]> = [
  ['a Parquet export', list({ format: 'parquet' }), 'Parquet exports (format=parquet)'],
];

/**
 * 18.16 has no DateTime64: a time a statement selects is whole seconds there (the event objects
 * keep their milliseconds: storage reads them from their own column). What DuckDB answers, as
 * 18.16 answers it.
 */
const wholeSeconds = (body: unknown): unknown => JSON.parse(JSON.stringify(body).replace(/(T\d{2}:\d{2}:\d{2})\.\d{6}\+00:00/g, '$1+00:00'));

/** Exports compared byte for byte: of project A or of the exports project (X). */
const EXPORTS: Array<[string, 'A' | 'X', Record<string, string>]> = [
  ['csv', 'A', { format: 'csv' }],
  ['csv of odd values, persons and elements', 'X', { format: 'csv' }],
  ['csv, limit', 'X', { format: 'csv', limit: '2' }],
  ['csv, ascending', 'X', { format: 'csv', orderBy: JSON.stringify(['timestamp']) }],
  ['csv, a property filter', 'A', { format: 'csv', properties: JSON.stringify([{ key: 'plan', operator: 'is_set' }]) }],
  ['csv, offset', 'X', { format: 'csv', limit: '2', offset: '1' }],
  ['csv, nothing matches', 'A', { format: 'csv', event: 'none' }],
  ['json', 'A', { format: 'json' }],
  ['json of odd values', 'X', { format: 'json' }],
  ['json, limit (next given)', 'X', { format: 'json', limit: '2' }],
  ['json, after and before', 'A', { format: 'json', after: '2024-01-06T00:00:00Z', before: '2024-01-09T12:00:00Z' }],
  ['ndjson', 'X', { format: 'ndjson' }],
  ['csv of a select', 'X', { format: 'csv', select: JSON.stringify(['event', 'distinct_id', 'properties.neg', 'properties.empty', 'properties.hash', 'properties.text', 'properties.flag']) }],
  // 18.16 selects a value's stored JSON text: a number in exponent form is written as DuckDB writes it (`1e21`, not `1e+21`).
  // Not `properties.obj`: 18.16 gives an object's stored text, whose numbers are JSON.stringify's (`2e+25`).
  ['csv of a select of numbers in exponent form', 'X', { format: 'csv', select: JSON.stringify(['event', 'properties.big', 'properties.small', 'properties.int', 'properties.neg', 'properties.`comma,key`']) }],
  ['json of a select of numbers in exponent form', 'X', { format: 'json', select: JSON.stringify(['properties.big', 'properties.small', "properties.big = '1e21'", 'toFloat(properties.big)']) }],
  ['json of a select with where', 'A', { format: 'json', select: JSON.stringify(['event', 'count()']), where: JSON.stringify(["event != 'signup'"]) }],
];

async function exportOf(f: EventsFixture, projectId: number, query: Record<string, string>) {
  const res = await f.t.call('GET', `/api/projects/${projectId}/events/?${new URLSearchParams(query)}`);
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
}

const pathOf = (f: EventsFixture, call: Call) =>
  call.path
    .replace(/^P/, `/api/projects/${f.projectId}/events`)
    .replace(/^Q/, `/api/projects/${f.projectId}/query/`)
    .replace(/U\((\w+)\)/, (_, key: string) => byKey(key).uuid);

async function ask(f: EventsFixture, call: Call) {
  const res = await f.t.json(call.method ?? 'GET', pathOf(f, call), call.body === undefined ? {} : { body: call.body });
  return { status: res.status, body: res.body };
}

/** The rows a project's event store holds, as the log's processed lines carry them. */
async function storedRows(t: TestApp, teamId: number): Promise<StoredEventRow[]> {
  const store = t.deps.storage.events;
  await store.flush();
  const relation = await store.eventsRelation(teamId);
  const rows: StoredEventRow[] = [];
  const statement =
    'SELECT uuid, team_id, event, distinct_id, person_id, CAST(properties AS VARCHAR) AS properties, epoch_ms(timestamp) AS ts, ' +
    `epoch_ms(created_at) AS created, elements_chain FROM ${relation.sql} AS events`;
  for await (const chunk of store.streamQuery(statement)) {
    for (const r of chunk) {
      rows.push({
        uuid: String(r.uuid), teamId: Number(r.team_id), event: String(r.event), distinctId: String(r.distinct_id),
        personId: r.person_id === null ? null : String(r.person_id), properties: String(r.properties),
        timestamp: Number(r.ts), createdAt: Number(r.created), elementsChain: String(r.elements_chain ?? ''),
      });
    }
  }
  return rows;
}

const engines: Array<{ name: string; available: boolean; reason: string; open: () => Promise<ClickHouse> }> = [
  { name: 'chDB (modern)', available: true, reason: '', open: async () => openClickHouse({ client: await chdbClient(), database: testDatabaseName() }) },
  { name: 'ClickHouse 18.16 server', available: clickhouseServerAvailable, reason: CLICKHOUSE_SKIP_REASON, open: async () => openClickHouse(parseClickHouseUrl(await clickhouseServerUrl())) },
];

/**
 * Ties for the cursor, in the second project: one second holds times whose uuids sort against
 * their milliseconds (18.16 keeps the seconds and the milliseconds in two columns), and three
 * events share one millisecond (the uuid decides).
 */
const BASE = NOW.getTime() - 2 * 3_600_000;
const tie = (n: string, offsetMs: number): Omit<FixtureEvent, 'key'> => ({
  event: 'tick', distinct_id: `tick-${n}`, timestamp: new Date(BASE + offsetMs), properties: { n }, uuid: `0f000000-0000-4000-8000-0000000000${n}`,
});
const TIES = [tie('09', 100), tie('01', 900), tie('03', 500), tie('07', 500), tie('05', 500), tie('02', 1000), tie('08', -1)];
/** Newest first: by time, then uuid descending. */
const TIES_ORDER = ['02', '01', '07', '05', '03', '09', '08'];

async function ingestTies(f: EventsFixture): Promise<void> {
  const project = await f.t.deps.storage.management.getProject(f.projectC, [f.t.account.organization.id]);
  await f.ingest(project!.apiToken, TIES);
}

/** Every page of the second project's ticks, `limit` at a time, following `next`. */
async function tickPages(f: EventsFixture, limit: number) {
  const pages: Array<{ status: number; body: { results: Array<{ id: string }>; next: string | null } }> = [];
  let path: string | null = `/api/projects/${f.projectC}/events/?event=tick&limit=${limit}`;
  while (path && pages.length < 20) {
    const res: { status: number; body: { results: Array<{ id: string }>; next: string | null } } = await f.t.json('GET', path);
    pages.push({ status: res.status, body: res.body });
    path = res.body.next ? relative(res.body.next) : null;
  }
  return pages;
}

/**
 * A third project for exports: values whose CSV text DuckDB's writer and `json_extract_string`
 * spell their own way (quotes, `#`, empty text, `1e21`, nested objects with integer-like keys,
 * null), a person with the CSV's person columns set, and times a millisecond apart.
 */
const EXPORT_BASE = NOW.getTime() - 3 * 3_600_000;
const exported = (n: number, event: string, distinctId: string, properties: Record<string, unknown>): Omit<FixtureEvent, 'key'> => ({
  event, distinct_id: distinctId, timestamp: new Date(EXPORT_BASE + n * 1_000 + n), properties, uuid: `0e000000-0000-4000-8000-0000000000${String(n).padStart(2, '0')}`,
});
const EXPORT_EVENTS = [
  exported(1, '$identify', 'dana', { $set: { email: 'dana@example.com', name: 'Dana, "D"', username: '#dana' } }),
  exported(2, 'odd values', 'dana', { big: 1e21, small: 1.5e-7, neg: -3, int: 12345678901234567000, flag: false, nil: null, empty: '', hash: '#x', 'comma,key': 'a\r\nb' }),
  exported(3, 'nested', 'erin', { obj: { '2': 1, b: [1, 2e25, 'é"\u0001'], '1': { z: null } }, list: [], text: 'ünïcödé' }),
  exported(4, '#hash event', '#erin', { $elements_chain: CHAIN, plan: 'pro' }),
  exported(5, 'odd values', 'frank', { big: -1e-300, int: 0, flag: true, empty: ' ' }),
];

/** One event with more property keys than a CSV export takes (MAX_CSV_PROPERTY_KEYS), then an ordinary one. */
const WIDE_EVENTS = [
  exported(6, 'wide', 'gus', Object.fromEntries(Array.from({ length: 1_001 }, (_, i) => [`k${i}`, i]))),
  exported(7, 'narrow', 'gus', { k0: 'x' }),
];

/** The exports project and the wide one, made in the same order in every fixture (their ids match). */
async function openExportProject(f: EventsFixture): Promise<{ exports: number; wide: number }> {
  const project = await f.t.deps.storage.management.createProject(f.t.account.organization.id, 'Exports', {});
  await f.ingest(project.apiToken, EXPORT_EVENTS);
  const wide = await f.t.deps.storage.management.createProject(f.t.account.organization.id, 'Wide', {});
  await f.ingest(wide.apiToken, WIDE_EVENTS);
  return { exports: project.id, wide: wide.id };
}

let duck: EventsFixture;
let duckExports: number;
let duckWide: number;
beforeAll(async () => {
  duck = await openEventsFixture();
  await ingestTies(duck);
  ({ exports: duckExports, wide: duckWide } = await openExportProject(duck));
});
afterAll(async () => {
  await duck?.close();
});

/**
 * Two ways the events get there: inserted as the cluster's writer does (`eventReads`: the app
 * only reads them), and loaded by the app's own event store (`eventsStore`, EVENTS_STORE on an
 * embedded server: its log, processing and loads, into ClickHouse instead of DuckDB's tiers).
 */
const MODES = [
  { name: 'rows inserted as the writer does', own: false },
  { name: 'the embedded store loading into it (EVENTS_STORE)', own: true },
];

for (const engine of engines) for (const mode of MODES) {
  const run = engine.available ? describe : describe.skip;
  run(`the events API on ClickHouse: ${engine.name}, ${mode.name}${engine.available ? '' : ` (skipped: ${engine.reason})`}`, () => {
    let ch: ClickHouse;
    let f: EventsFixture;
    let exportsProject: number;
    let wideProject: number;
    beforeAll(async () => {
      ch = await engine.open();
      await migrateClickHouse(ch);
      if (mode.own) {
        f = await openEventsFixture({}, { eventsStore: ch });
        await ingestTies(f);
        ({ exports: exportsProject, wide: wideProject } = await openExportProject(f));
      } else {
        f = await openEventsFixture({}, { eventReads: ch });
        await ingestTies(f);
        ({ exports: exportsProject, wide: wideProject } = await openExportProject(f));
        const rows = (await Promise.all([f.projectId, f.projectC, f.other.projectId, exportsProject, wideProject].map((id) => storedRows(f.t, id)))).flat();
        const text = encodePlacedLines(rows).toString('utf8');
        await insertProcessed(ch, text, 1);
        // A load retried after an unknown outcome: the reads (FINAL) still show each event once.
        await insertProcessed(ch, text, 1);
      }
      expect(f.projectId).toBe(duck.projectId);
      expect([exportsProject, wideProject]).toEqual([duckExports, duckWide]);
    });
    afterAll(async () => {
      await f?.close();
      await ch?.close();
    });

    test.each(CASES)('%s: the same answer as DuckDB', async (_name, call) => {
      const expected = await ask(duck, call);
      expect(expected.status === 200 || expected.status === 404).toBe(true);
      const got = await ask(f, call);
      if (ch.features.datetime64 || !/milliseconds/.test(_name)) expect(got).toEqual(expected);
      else {
        expect(got).not.toEqual(expected);
        expect(got).toEqual({ status: expected.status, body: wholeSeconds(expected.body) });
      }
    });

    test.each(EXPORTS)('export, %s: the same bytes as DuckDB', async (_name, project, query) => {
      const expected = await exportOf(duck, project === 'A' ? duck.projectId : duckExports, query);
      expect(expected.status).toBe(200);
      expect(expected.text.length).toBeGreaterThan(20);
      expect(await exportOf(f, project === 'A' ? f.projectId : exportsProject, query)).toEqual(expected);
    });

    test('an export read in slices of two rows (several statements) is the same as DuckDB\'s', async () => {
      for (const fx of [duck, f]) fx.t.deps.exportSlices = { rows: 2, firstRows: 1 };
      try {
        for (const [, project, query] of EXPORTS) {
          const expected = await exportOf(duck, project === 'A' ? duck.projectId : duckExports, query);
          expect(await exportOf(f, project === 'A' ? f.projectId : exportsProject, query)).toEqual(expected);
        }
      } finally {
        for (const fx of [duck, f]) delete fx.t.deps.exportSlices;
      }
    });

    test('a CSV export of more property keys than it takes is the same 400 (the key pass stops there); fewer rows, or JSON, are exported', async () => {
      const queries: Array<[Record<string, string>, number]> = [[{ format: 'csv' }, 400], [{ format: 'csv', event: 'narrow' }, 200], [{ format: 'json' }, 200]];
      for (const [query, status] of queries) {
        const expected = await exportOf(duck, duckWide, query);
        expect(expected.status).toBe(status);
        expect(await exportOf(f, wideProject, query)).toEqual(expected);
      }
    });

    test('a statement failing after the body started cuts it short: no CSV or JSON that looks complete', async () => {
      const real = f.t.deps.storage.eventReads;
      const storage = f.t.deps.storage as { eventReads: EventReads };
      f.t.deps.exportSlices = { rows: 2, firstRows: 1 };
      try {
        for (const format of ['csv', 'json']) {
          // A run that succeeds counts the statements; the next fails its last one (the last slice's rows).
          let statements = 0;
          let failAt = Number.POSITIVE_INFINITY;
          storage.eventReads = {
            ...real,
            streamQuery: (text, params, options) => {
              if (++statements >= failAt) throw new AppError('unavailable', 'The events database is not reachable; retry later.');
              return real.streamQuery(text, params, options);
            },
          };
          const whole = await exportOf(f, exportsProject, { format });
          expect(whole.status).toBe(200);
          failAt = statements;
          statements = 0;
          const res = await f.t.call('GET', `/api/projects/${exportsProject}/events/?format=${format}`);
          expect(res.status).toBe(200);
          const read = await res.text().then(
            (text) => ({ text, error: null }),
            (error: unknown) => ({ text: null, error }),
          );
          expect(read).toEqual({ text: null, error: expect.objectContaining({ kind: 'unavailable' }) });
        }
      } finally {
        storage.eventReads = real;
        delete f.t.deps.exportSlices;
      }
    });

    test('pages by cursor (`next`) are the same, with no event twice or missing', async () => {
      const query = { limit: '2', before: '2030-01-01' };
      const pages = await allPages(f, query);
      expect(pages).toEqual(await allPages(duck, query));
      expect(pages.flatMap((p) => p.results.map((r) => r.id))).toEqual([byKey('a7'), ...VISIBLE].map((e) => e.uuid));
    });

    test('ties: times within one second and within one millisecond page in the same order, once each', async () => {
      for (const limit of [1, 2, 3]) {
        const pages = await tickPages(f, limit);
        expect(pages).toEqual(await tickPages(duck, limit));
        expect(pages.flatMap((p) => p.body.results.map((r) => r.id))).toEqual(TIES_ORDER.map((n) => tie(n, 0).uuid));
      }
    });

    test("a person's list (distinct_id=) pages by cursor as DuckDB's, newest first, each event once", async () => {
      const query = { distinct_id: 'bob', limit: '1', before: '2030-01-01' };
      const pages = await allPages(f, query);
      expect(pages).toEqual(await allPages(duck, query));
      const ids = pages.flatMap((p) => p.results.map((r) => r.id));
      expect(ids.length).toBeGreaterThan(1);
      expect(ids).toEqual(VISIBLE.filter((e) => e.distinct_id === 'bob').map((e) => e.uuid));
    });

    test("a person's list and count read the person-ordered copy, other lists the time-ordered table", async () => {
      // A row only in the copy, under a distinct id of its own: seen by that person's list alone.
      // (Selected from a subquery: ClickHouse would read the alias in this statement's WHERE.)
      const [database, table] = ch.table('events').split('.') as [string, string];
      const columns = (await ch.query<{ name: string }>(sql`SELECT name FROM system.columns WHERE database = ${ch.dialect.bind(database)} AND table = ${ch.dialect.bind(table)}`)).map((c) => c.name);
      const select = columns.map((c) => (c === 'distinct_id' ? "'only-in-copy' AS distinct_id" : c)).join(', ');
      await ch.command(trusted(`INSERT INTO ${ch.table('events_by_person')} (${columns.join(', ')}) SELECT ${select} FROM (SELECT * FROM ${ch.table('events')} WHERE team_id = ${f.projectId} AND distinct_id = 'bob' LIMIT 1)`));
      const inCopy = await f.list({ distinct_id: 'only-in-copy' });
      expect(inCopy.body.count).toBe(1);
      expect(inCopy.body.results.map((e: { distinct_id: string }) => e.distinct_id)).toEqual(['only-in-copy']);
      const all = await f.list({ limit: '100', before: '2030-01-01' });
      expect(all.body.results.some((e: { distinct_id: string }) => e.distinct_id === 'only-in-copy')).toBe(false);
    });

    test('bounds with fractions of a second (18.16 keeps the milliseconds beside whole seconds) answer as DuckDB', async () => {
      // The ticks are at 10:00:00 + 100, 500 (three), 900 and 1000 ms, and at 09:59:59.999.
      const at = (rest: string) => `2024-01-10T${rest}Z`;
      const ticks = (query: Record<string, string>): Call => list({ event: 'tick', ...query });
      const where = (...conditions: string[]): Call => list({ event: 'tick', select: JSON.stringify(['distinct_id']), where: JSON.stringify(conditions), orderBy: JSON.stringify(['distinct_id']) });
      const calls: Call[] = [
        ticks({ before: at('10:00:00.500001') }), ticks({ before: at('10:00:00.5') }), ticks({ before: at('10:00:01.000001') }),
        ticks({ after: at('10:00:00.499999') }), ticks({ after: at('10:00:00.5') }), ticks({ after: at('09:59:59.9985') }),
        ticks({ after: at('09:59:59.9995') }), ticks({ after: at('10:00:00.1'), before: at('10:00:00.900001') }),
        where("timestamp >= '2024-01-10 10:00:00.500001'"), where("timestamp <= '2024-01-10 10:00:00.5'"),
        where("timestamp = '2024-01-10 10:00:00.5'"), where("timestamp = '2024-01-10 10:00:00.5001'"),
        where("timestamp != '2024-01-10 10:00:00.5'"), where("'2024-01-10 10:00:00.9' > timestamp"), where("timestamp >= toDate('2024-01-10')"),
        ticks({ properties: JSON.stringify([{ key: 'timestamp', value: at('10:00:00.5'), operator: 'is_date_before', type: 'event_metadata' }]) }),
        ticks({ properties: JSON.stringify([{ key: 'timestamp', value: at('10:00:00.4999'), operator: 'is_date_after', type: 'event_metadata' }]) }),
        hogql("SELECT distinct_id FROM events WHERE event = 'tick' AND timestamp > '2024-01-10 10:00:00.5' AND timestamp <= '2024-01-10 10:00:00.9999' ORDER BY distinct_id"),
        hogql("SELECT count() FROM events WHERE event = 'tick' AND timestamp < '2024-01-10 10:00:00.500001' AND person.properties.email IS NULL"),
      ];
      for (const call of calls) {
        const of = async (fx: EventsFixture) => ask({ ...fx, projectId: fx.projectC }, call);
        const expected = await of(duck);
        expect(expected.status).toBe(200);
        expect(await of(f)).toEqual(expected);
      }
    });

    test('person_id= (the person store gives the distinct ids) matches', async () => {
      const personOf = (fx: EventsFixture) => fx.t.deps.storage.persons.findByDistinctId(fx.projectId, 'alice')!.uuid;
      const expected = await duck.list({ person_id: personOf(duck) });
      expect(expected.body.count).toBe(3);
      expect(await f.list({ person_id: personOf(f) })).toMatchObject({ status: 200, body: expected.body });
    });

    describe('persons changed after their events', () => {
      // Each describe's persons in the second project of both apps, apart from the other describes' by `tag`.
      const tag = `${engine.name}/${mode.name}`.replace(/\W+/g, '-');
      let seq = 0;
      const at = () => new Date(NOW.getTime() - 3_600_000 + 1_000 * ++seq);
      const event = (distinctId: string, name: string, properties: Record<string, unknown>) => ({ event: name, distinct_id: `${tag}-${distinctId}`, timestamp: at(), properties, uuid: uuidv7(NOW.getTime()) });
      const both = async (events: ReturnType<typeof event>[]) => {
        for (const fx of [duck, f]) {
          const project = await fx.t.deps.storage.management.getProject(fx.projectC, [fx.t.account.organization.id]);
          await fx.ingest(project!.apiToken, events);
        }
        if (mode.own) return;
        // Where the app only reads the table, the new events are inserted as the writer would.
        const uuids = new Set(events.map((e) => e.uuid));
        const rows = (await storedRows(f.t, f.projectC)).filter((r) => uuids.has(r.uuid));
        expect(rows.length).toBe(events.length);
        await insertProcessed(ch, encodePlacedLines(rows).toString('utf8'), ++seq);
      };
      /** The same request of both apps' second project: equal whole answers, and ClickHouse's returned. */
      const same = async (call: Call) => {
        const of = async (fx: EventsFixture) => {
          const res = await fx.t.json(call.method ?? 'GET', pathOf({ ...fx, projectId: fx.projectC }, call), call.body === undefined ? {} : { body: call.body });
          return { status: res.status, body: res.body };
        };
        const expected = await of(duck);
        expect(expected.status).toBe(200);
        const got = await of(f);
        expect(got).toEqual(expected);
        return got.body;
      };
      const byTag = (plan: string) => props([{ key: 'tag', value: tag, type: 'person' }, { key: 'plan', value: plan, type: 'person' }]);
      const personsOfTag = hogql(`SELECT pdi.distinct_id, properties.plan, is_identified FROM persons WHERE properties.tag = '${tag}' ORDER BY pdi.distinct_id`);
      const planPerEvent = list({ select: JSON.stringify(['distinct_id', 'person.properties.plan', 'count()']), properties: JSON.stringify([{ key: 'tag', value: tag, type: 'person' }]), orderBy: JSON.stringify(['distinct_id']) });

      test('a merge and a later $set are what the person filters, person columns and persons table read', async () => {
        await both([event('anon', '$pageview', { $set: { tag, plan: 'free' } }), event('user', '$pageview', { $set: { tag, plan: 'trial' } })]);
        expect(((await same(personsOfTag)) as { results: unknown[] }).results).toEqual([[`${tag}-anon`, 'free', false], [`${tag}-user`, 'trial', false]]);
        expect(((await same(byTag('free'))) as { count: number }).count).toBe(1);

        // The anonymous person merged into the user's, then the merged person's plan changed.
        await both([event('user', '$identify', { $anon_distinct_id: `${tag}-anon` }), event('user', '$pageview', { $set: { plan: 'pro' } })]);
        expect(((await same(personsOfTag)) as { results: unknown[] }).results).toEqual([[`${tag}-anon`, 'pro', true], [`${tag}-user`, 'pro', true]]);
        expect(((await same(byTag('free'))) as { count: number }).count).toBe(0);
        const pro = (await same(byTag('pro'))) as { count: number; results: Array<{ distinct_id: string }> };
        expect(pro.results.map((e) => e.distinct_id)).toEqual([`${tag}-user`, `${tag}-user`, `${tag}-user`, `${tag}-anon`]);
        expect(((await same(planPerEvent)) as { results: unknown[] }).results).toEqual([[`${tag}-anon`, 'pro', 1], [`${tag}-user`, 'pro', 3]]);
      });

      test('a deleted person is no longer joined to their events', async () => {
        for (const fx of [duck, f]) {
          const person = fx.t.deps.storage.persons.findByDistinctId(fx.projectC, `${tag}-user`)!;
          expect((await fx.t.call('DELETE', `/api/projects/${fx.projectC}/persons/${person.uuid}/`)).status).toBe(202);
        }
        expect(((await same(personsOfTag)) as { results: unknown[] }).results).toEqual([]);
        expect(((await same(byTag('pro'))) as { count: number }).count).toBe(0);
        // The events stay, without a person.
        const ofTag = (where: string) => list({ select: JSON.stringify(['count()']), where: JSON.stringify([`distinct_id LIKE '${tag}-%'`, where]) });
        expect(((await same(ofTag('person.properties.plan IS NULL'))) as { results: unknown[] }).results).toEqual([[4]]);
        expect(((await same(ofTag('person.properties.plan IS NOT NULL'))) as { results: unknown[] }).results).toEqual([[0]]);
      });

      test("projects are apart: one project's persons are not joined to another's events", async () => {
        await both([event('alice', '$pageview', { $set: { tag, email: 'alice@example.com' } })]);
        const alices = async (fx: EventsFixture, project: number) =>
          (await fx.t.json('POST', `/api/projects/${project}/query/`, { body: { query: { kind: 'HogQLQuery', query: "SELECT count() FROM persons WHERE properties.email = 'alice@example.com'" } } })).body.results;
        // Project A has its own alice; the second project now one of its own; the other organization none.
        expect(await alices(f, f.projectId)).toEqual([[1]]);
        expect(await alices(f, f.projectC)).toEqual([[1]]);
        const inA = await f.t.json('GET', `/api/projects/${f.projectId}/events/?${new URLSearchParams({ properties: JSON.stringify([{ key: 'tag', value: tag, type: 'person' }]) })}`);
        expect(inA.body.count).toBe(0);
        const other = await f.t.json('GET', `/api/projects/${f.other.projectId}/events/?${new URLSearchParams({ properties: JSON.stringify([{ key: 'email', value: 'alice@example.com', type: 'person' }]) })}`, { key: f.other.key });
        expect({ status: other.status, count: other.body.count }).toEqual({ status: 200, count: 0 });
        expect(((await same(props([{ key: 'email', value: 'alice@example.com', type: 'person' }, { key: 'tag', value: tag, type: 'person' }]))) as { results: Array<{ distinct_id: string }> }).results.map((e) => e.distinct_id)).toEqual([`${tag}-alice`]);
      });
    });

    test("person_id= reads the person's distinct ids from the person-ordered copy", async () => {
      // A row of alice's only in the copy (after the test above: it changes her counts).
      const [database, table] = ch.table('events').split('.') as [string, string];
      const columns = (await ch.query<{ name: string }>(sql`SELECT name FROM system.columns WHERE database = ${ch.dialect.bind(database)} AND table = ${ch.dialect.bind(table)}`)).map((c) => c.name);
      const select = columns.map((c) => (c === 'distinct_id' ? "'alice' AS distinct_id" : c)).join(', ');
      await ch.command(trusted(`INSERT INTO ${ch.table('events_by_person')} (${columns.join(', ')}) SELECT ${select} FROM (SELECT * FROM ${ch.table('events')} WHERE team_id = ${f.projectId} AND distinct_id = 'bob' LIMIT 1)`));
      const alice = f.t.deps.storage.persons.findByDistinctId(f.projectId, 'alice')!.uuid;
      expect((await f.list({ person_id: alice })).body.count).toBe(4);
    });

    const unsupported = (what: string) => ({ status: 400, body: { type: 'validation_error', code: 'invalid_input', detail: `${what}: the ClickHouse events store does not support this yet.`, attr: null } });

    if (!mode.own) {
      // A node's shape (it reads what others insert): it cannot wait for the rows the writers
      // have not inserted yet, so it does not claim an erasure (persons-delete-clickhouse.test.ts
      // has the embedded server's).
      test('deleting a person\'s events is a 400 where the events are only read, and changes nothing', async () => {
        const alice = f.t.deps.storage.persons.findByDistinctId(f.projectId, 'alice')!;
        expect(await f.t.json('DELETE', `/api/projects/${f.projectId}/persons/${alice.uuid}/?delete_events=true`)).toMatchObject(unsupported("Deleting a person's events (delete_events)"));
        expect((await f.t.json('GET', `/api/projects/${f.projectId}/persons/${alice.uuid}/`)).status).toBe(200);
        expect((await f.list({ distinct_id: 'alice' })).body.count).toBeGreaterThan(0);
      });
    }

    if (mode.own) {
      test('a cohort defined by events is calculated from ClickHouse\'s events: the same members as DuckDB\'s (cohorts-clickhouse.test.ts has more)', async () => {
        const behavioral = { name: 'viewers', filters: { properties: { type: 'AND', values: [{ type: 'behavioral', value: 'performed_event', key: '$pageview', event_type: 'events', time_value: 30, time_interval: 'day' }] } } };
        const members = async (fx: EventsFixture) => {
          const created = await fx.t.json('POST', `/api/projects/${fx.projectId}/cohorts/`, { body: behavioral });
          expect(created.status).toBe(201);
          await fx.t.deps.storage.cohorts.whenIdle();
          const persons = await fx.t.json('GET', `/api/projects/${fx.projectId}/cohorts/${created.body.id}/persons/`);
          return (persons.body.results as Array<{ distinct_ids: string[] }>).map((p) => p.distinct_ids);
        };
        const expected = await members(duck);
        expect(expected.length).toBeGreaterThan(0);
        expect(await members(f)).toEqual(expected);
      });

      test('a deleted project\'s events are deleted from ClickHouse', async () => {
        const count = async () => (await ch.query<{ n: string | number }>(sql`SELECT count() AS n FROM ${trusted(ch.table('events'))} WHERE team_id = ${ch.dialect.bind(f.projectC)}`))[0]!.n;
        expect(Number(await count())).toBeGreaterThan(0);
        expect((await f.t.call('DELETE', `/api/projects/${f.projectC}/`)).status).toBe(204);
        // A mutation: applied in the background (18.16 cannot be asked to wait for it).
        for (const deadline = Date.now() + 20_000; Number(await count()) > 0 && Date.now() < deadline; ) await Bun.sleep(100);
        expect(Number(await count())).toBe(0);
        expect(await countOtherTeams()).toBeGreaterThan(0);
      });
      const countOtherTeams = async () => Number((await ch.query<{ n: string | number }>(sql`SELECT count() AS n FROM ${trusted(ch.table('events'))} WHERE team_id != ${ch.dialect.bind(f.projectC)}`))[0]!.n);
    }

    test.each(UNSUPPORTED)('%s: a 400 saying the ClickHouse store does not support it yet', async (_name, call, what) => {
      const answered = await duck.t.call(call.method ?? 'GET', pathOf(duck, call), call.body === undefined ? {} : { body: call.body });
      expect(answered.status).toBe(200);
      // Read to its end: an export's temporary file is removed once sent (or cancelled), not when its answer is dropped.
      expect((await answered.arrayBuffer()).byteLength).toBeGreaterThan(0);
      expect(await ask(f, call)).toEqual({
        status: 400,
        body: { type: 'validation_error', code: 'invalid_input', detail: `${what}: the ClickHouse events store does not support this yet.`, attr: null },
      });
    });
  });
}
