import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { assembleStatement, CLICKHOUSE_18, compileEventsQuery, compileStatement, type SqlFragment } from '../../../src/core/query';
import { CLICKHOUSE_SKIP_REASON, clickhouseServerAvailable, startClickHouseServer, type ClickHouseServer } from '../../helpers/clickhouse';
import { AppError } from '../../../src/errors';
import { CASES, FIXTURE_EVENTS, NOW, type QueryCase } from './cases';
import { fixtureStatements, OUTPUT_SETTINGS, plainRows, statementIn } from './clickhouse-fixture';
import { openFixture, runRows, statementFor } from './duckdb-fixture';
import { EVENTS_QUERY_CASES, type EventsQueryCase } from './events-query-cases';
import { generatedProbes, PROBES_ANSWERED_OTHERWISE } from './probes';
import { STATEMENT_CASES, type StatementCase } from './statement-cases';

/**
 * The 18.16 spelling on the Debian ClickHouse 18.16 server (chDB runs it too, but a modern engine
 * accepts more than 18.16 does): every answered case gives DuckDB's answer on the same rows, but
 * for what a DateTime of whole seconds cannot hold. Skipped where the package is not installed.
 */

/**
 * Sub-second times: 18.16 stores seconds and storage keeps the milliseconds in a column of their
 * own, which comparisons with an instant read (so bounds are exact) but a selected time does not.
 */
const SECONDS_ONLY: Record<string, string> = {
  'SELECT * with a table alias': 'e4 reads back at …59, not …59.5',
  "personId: that person's distinct ids": 'e4 reads back at …59, not …59.5',
};

let server: ClickHouseServer;

async function rows(statement: SqlFragment): Promise<unknown[][]> {
  const rendered = CLICKHOUSE_18.render(statement);
  return plainRows(await server.query(`${rendered.sql} FORMAT JSONCompact`, OUTPUT_SETTINGS));
}

function statementOf(c: StatementCase, team1: boolean): SqlFragment {
  const compiled = compileStatement(c.query, c.values, NOW, CLICKHOUSE_18);
  const table = compiled.table === 'persons' && compiled.readsDistinctIds ? 'persons_pdi' : compiled.table;
  return assembleStatement(compiled, { relation: team1 ? `team1_${table}` : table, teamId: 1, limit: compiled.limit ?? 100, offset: compiled.offset ?? 0, dialect: CLICKHOUSE_18 });
}

function eventsQueryOf(c: EventsQueryCase, relation: string): SqlFragment {
  const context = { displayNameProperties: ['email', 'name', 'username'], testAccountFilters: [], personDistinctIds: null, ...c.context };
  const compiled = compileEventsQuery(c.input, NOW, context, CLICKHOUSE_18);
  return assembleStatement(compiled.statement, { relation, teamId: 1, limit: compiled.limit ?? 100, offset: compiled.offset, dialect: CLICKHOUSE_18 });
}

const answered = CASES.filter((c) => !c.error && (c.rows || c.uuids));
const expected = (c: QueryCase) => c.rows ?? (c.uuids ?? []).map((u) => [u]);
const kept = <T extends { name: string }>(cases: T[]) => cases.filter((c) => !(c.name in SECONDS_ONLY)).map((c) => [c.name, c] as const);

describe.skipIf(!clickhouseServerAvailable)(`ClickHouse 18.16 server${clickhouseServerAvailable ? '' : ` (skipped: ${CLICKHOUSE_SKIP_REASON})`}`, () => {
  beforeAll(async () => {
    server = await startClickHouseServer();
    expect(await server.query('SELECT version()')).toStartWith('18.16.');
    for (const statement of fixtureStatements(false)) await server.query(statement);
  });
  afterAll(() => server?.stop());

  test.each(kept(answered))('events API: %s', async (_case, c) => {
    const all = await rows(statementIn(CLICKHOUSE_18, c, 'events'));
    expect(all).toEqual(expected(c));
    expect(await rows(statementIn(CLICKHOUSE_18, c, 'team1_events'))).toEqual(all);
  });

  test.each(kept(STATEMENT_CASES.filter((c) => c.rows)))('HogQL: %s', async (_case, c) => {
    const all = await rows(statementOf(c, false));
    expect(all).toEqual(c.rows!);
    expect(await rows(statementOf(c, true))).toEqual(all);
  });

  test.each(kept(EVENTS_QUERY_CASES.filter((c) => c.rows)))('EventsQuery: %s', async (_case, c) => {
    const all = await rows(eventsQueryOf(c, 'events'));
    expect(all).toEqual(c.rows!);
    expect(await rows(eventsQueryOf(c, 'team1_events'))).toEqual(all);
  });

  test('injection probes: refused by the compiler, or run inside team 1 with the answer DuckDB gives; nothing changes', async () => {
    const duckdb = await openFixture();
    const state = async () => [await server.query('SHOW TABLES'), await server.query('SELECT * FROM events ORDER BY uuid')];
    const before = await state();
    const team1 = new Set(FIXTURE_EVENTS.filter((e) => e.team_id === 1).map((e) => e.uuid));
    let ran = 0;
    try {
      for (const c of [...CASES.filter((x) => x.probe), ...generatedProbes()]) {
        let expected: unknown[][];
        try {
          expected = await runRows(duckdb, statementFor(c, 'events'));
        } catch (error) {
          expect(error).toBeInstanceOf(AppError);
          continue;
        }
        ran++;
        const key = JSON.stringify([c.select, c.where]);
        const all = await rows(statementIn(CLICKHOUSE_18, c, 'events')).catch((error: Error) => {
          throw new Error(`${key}: ${error.message}`);
        });
        expect(await rows(statementIn(CLICKHOUSE_18, c, 'team1_events'))).toEqual(all);
        if (!c.select) for (const [uuid] of all) expect(team1.has(uuid as string)).toBe(true);
        if (!PROBES_ANSWERED_OTHERWISE[key]) expect([key, rounded(all)]).toEqual([key, rounded(expected)]);
      }
    } finally {
      duckdb.closeSync();
    }
    expect(await state()).toEqual(before);
    expect(ran).toBeGreaterThan(100);
  });

  test('the cases left out are cases', () => {
    const names = [...answered, ...STATEMENT_CASES, ...EVENTS_QUERY_CASES].map((c) => c.name);
    expect(Object.keys(SECONDS_ONLY).filter((name) => !names.includes(name))).toEqual([]);
  });
});

/** Floats to 12 digits (the engines sum in different orders), times to the second (all 18.16's DateTime holds). */
const rounded = (rows: unknown[][]) =>
  rows.map((row) => row.map((v) => (typeof v === 'number' ? Number(v.toPrecision(12)) : typeof v === 'string' && ISO.test(v) ? v.slice(0, 19) : v)));
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
