import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { Session } from 'chdb';
import {
  assembleStatement, CLICKHOUSE, CLICKHOUSE_18, clickhouseLiteral, compileEventsQuery, compileStatement, type Dialect,
} from '../../../src/core/query';
import { AppError } from '../../../src/errors';
import { CASES, FIXTURE_EVENTS, NOW, type QueryCase } from './cases';
import { openChdbFixture, runChdbRows, statementIn } from './clickhouse-fixture';
import { openFixture, runRows, statementFor } from './duckdb-fixture';
import { EVENTS_QUERY_CASES, type EventsQueryCase } from './events-query-cases';
import { generatedProbes, PROBES_ANSWERED_OTHERWISE } from './probes';
import { STATEMENT_CASES, type StatementCase } from './statement-cases';

/**
 * The ClickHouse dialect against the engine (chDB, ClickHouse 26.7 in process): every case of
 * cases.ts and statement-cases.ts that has a known answer on the DuckDB fixture gives that same
 * answer on the same rows in ClickHouse, over all teams' rows and over team 1's alone.
 *
 * The 18.16 spelling (literals, visitParam, DateTime) runs on chDB too; clickhouse-18.test.ts runs
 * it on the 18.16 server itself.
 */

/** The 18.16 spelling writes instants to the second (its DateTime holds no more); chDB's table here keeps microseconds. */
const NOT_ON_18: Record<string, string> = {
  'before keeps microseconds (next-page cursor)': 'a cursor at …59.500001 is written as …59, which e4 (…59.5) is not before',
};

let session: Session;
beforeAll(() => {
  session = openChdbFixture();
});
afterAll(() => session.close());

function statementOf(d: Dialect, c: StatementCase, team1: boolean) {
  const compiled = compileStatement(c.query, c.values, NOW, d);
  const table = compiled.table === 'persons' && compiled.readsDistinctIds ? 'persons_pdi' : compiled.table;
  return assembleStatement(compiled, { relation: team1 ? `team1_${table}` : table, teamId: 1, limit: compiled.limit ?? 100, offset: compiled.offset ?? 0, dialect: d });
}

/** An EventsQuery (PostHog's UI) as storage would run it, as events-query.test.ts builds it for DuckDB. */
function eventsQueryOf(d: Dialect, c: EventsQueryCase, relation: string) {
  const context = { displayNameProperties: ['email', 'name', 'username'], testAccountFilters: [], personDistinctIds: null, ...c.context };
  const compiled = compileEventsQuery(c.input, NOW, context, d);
  return assembleStatement(compiled.statement, { relation, teamId: 1, limit: compiled.limit ?? 100, offset: compiled.offset, dialect: d });
}

const answered = CASES.filter((c) => !c.error && (c.rows || c.uuids));
const expected = (c: QueryCase) => c.rows ?? (c.uuids ?? []).map((u) => [u]);

describe.each([
  ['modern ClickHouse', CLICKHOUSE, {}],
  ['ClickHouse 18.16 spelling', CLICKHOUSE_18, NOT_ON_18],
] as const)('%s on chDB', (_name, dialect, skipped: Record<string, string>) => {
  test.each(answered.filter((c) => !(c.name in skipped)).map((c) => [c.name, c] as const))('events API: %s', (_case, c) => {
    const rows = runChdbRows(session, dialect, statementIn(dialect, c, 'events'));
    expect(rows).toEqual(expected(c));
    expect(runChdbRows(session, dialect, statementIn(dialect, c, 'team1_events'))).toEqual(rows);
  });

  test.each(STATEMENT_CASES.filter((c) => c.rows).map((c) => [c.name, c] as const))('HogQL: %s', (_case, c) => {
    const rows = runChdbRows(session, dialect, statementOf(dialect, c, false));
    expect(rows).toEqual(c.rows!);
    expect(runChdbRows(session, dialect, statementOf(dialect, c, true))).toEqual(rows);
  });

  test.each(EVENTS_QUERY_CASES.filter((c) => c.rows && !(c.name in skipped)).map((c) => [c.name, c] as const))('EventsQuery: %s', (_case, c) => {
    const rows = runChdbRows(session, dialect, eventsQueryOf(dialect, c, 'events'));
    expect(rows).toEqual(c.rows!);
    expect(runChdbRows(session, dialect, eventsQueryOf(dialect, c, 'team1_events'))).toEqual(rows);
  });

  test('the cases left out are cases', () => {
    expect(Object.keys(skipped).filter((name) => !answered.some((c) => c.name === name))).toEqual([]);
  });
});

describe('literals for servers without query parameters', () => {
  // Every string the fixture and the probes hold, and the characters ClickHouse's reader treats specially.
  const strings = [
    ...new Set([
      ...FIXTURE_EVENTS.flatMap((e) => [e.event, e.distinct_id, ...Object.keys(e.properties), JSON.stringify(e.properties)]),
      ...CASES.filter((c) => c.probe).flatMap((c) => [...(c.select ?? []), ...(c.where ?? []), ...Object.values(c.filters ?? {}).map(String)]),
      "'", "\\'", '\\', "\\\\'", '\n', '\r\t', '\0', '\b\f', "' OR 1 = 1 --", "'); DROP TABLE events; --", '{p0:String}', '$1', '?', 'ünï 🙂', '\\x27', "''",
    ]),
  ];

  test.each(strings.map((s) => [JSON.stringify(s).slice(0, 80), s] as const))('%s reads back as itself', (_label, value) => {
    const text = session.query(`SELECT ${clickhouseLiteral(value)} AS v FORMAT JSONEachRow`);
    expect(JSON.parse(text).v).toBe(value);
  });

  test.each(['a"b`c\\d', "x'y", 'ünï', 'count()'])('identifier %j reads back as itself', (name) => {
    const text = session.query(`SELECT 1 AS ${CLICKHOUSE.quoteIdentifier(name)} FORMAT JSONEachRow`);
    expect(Object.keys(JSON.parse(text))).toEqual([name]);
  });

  test.each([0, -0, 7, -7, 2.5, -2.5, 1e26, -1e-7, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER])('%p reads back as itself', (value) => {
    const text = session.query(`SELECT 0 - ${clickhouseLiteral(value)} AS v FORMAT JSONEachRow SETTINGS output_format_json_quote_64bit_integers = 0`);
    expect(Number(JSON.parse(text).v)).toBe(0 - value);
  });
});

describe('injection probes in both spellings', () => {
  const probes = [...CASES.filter((c) => c.probe), ...generatedProbes()];
  const team1 = new Set(FIXTURE_EVENTS.filter((e) => e.team_id === 1).map((e) => e.uuid));
  const state = () => [session.query('SHOW TABLES', 'CSV'), session.query('SELECT * FROM events ORDER BY uuid', 'CSV')];

  test('each is refused by the compiler, or runs on chDB inside team 1 with the answer DuckDB gives; nothing changes', async () => {
    const duckdb = await openFixture();
    const before = state();
    const outcomes = { refused: 0, ran: 0 };
    try {
      for (const c of probes) {
        let expected: unknown[][];
        try {
          expected = await runRows(duckdb, statementFor(c, 'events'));
        } catch (error) {
          expect(error).toBeInstanceOf(AppError);
          outcomes.refused++;
          continue;
        }
        outcomes.ran++;
        for (const dialect of [CLICKHOUSE, CLICKHOUSE_18]) {
          const rows = runChdbRows(session, dialect, statementIn(dialect, c, 'events'));
          // Over team 1's rows alone where values are written into the text (bound ones cannot reach it).
          if (dialect === CLICKHOUSE_18) expect(runChdbRows(session, dialect, statementIn(dialect, c, 'team1_events'))).toEqual(rows);
          if (!c.select) for (const [uuid] of rows) expect(team1.has(uuid as string)).toBe(true);
          const key = JSON.stringify([c.select, c.where]);
          // Floats compared to 12 digits: the engines sum in different orders.
          if (!PROBES_ANSWERED_OTHERWISE[key]) expect([key, rounded(rows)]).toEqual([key, rounded(expected)]);
        }
      }
    } finally {
      duckdb.closeSync();
    }
    expect(state()).toEqual(before);
    expect(outcomes.ran).toBeGreaterThan(100);
  });
});

const rounded = (rows: unknown[][]) => rows.map((row) => row.map((v) => (typeof v === 'number' ? Number(v.toPrecision(12)) : v)));
