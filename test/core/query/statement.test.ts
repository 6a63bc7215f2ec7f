import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { DuckDBConnection } from '@duckdb/node-api';
import { assembleStatement, compileStatement } from '../../../src/core/query';
import { AppError } from '../../../src/errors';
import { FIXTURE_EVENTS, FIXTURE_PERSONS, NOW } from './cases';
import { openFixture, runRows } from './duckdb-fixture';
import { STATEMENT_CASES, type StatementCase } from './statement-cases';

/**
 * The statement storage would run for a case for team 1, over a relation named as its table
 * (`exact`), or over the fixture's relation of that table: all teams' rows, or team 1's alone.
 */
function statementFor(c: StatementCase, over: 'exact' | 'all' | 'team1' = 'all') {
  const compiled = compileStatement(c.query, c.values, NOW);
  const table = compiled.table === 'persons' && compiled.readsDistinctIds ? 'persons_pdi' : compiled.table;
  const relation = over === 'exact' ? compiled.table : over === 'team1' ? `team1_${table}` : table;
  return { compiled, statement: assembleStatement(compiled, { relation, teamId: 1, limit: compiled.limit ?? 100, offset: compiled.offset ?? 0 }) };
}

function errorOf(c: StatementCase): unknown {
  try {
    statementFor(c);
  } catch (error) {
    return error instanceof AppError ? { kind: error.kind, status: error.status, attr: error.attr, detail: error.detail } : error;
  }
  return 'no error';
}

let db: DuckDBConnection;
let snapshot: unknown[][];
const databaseState = async () => [
  ...(await runRows(db, { sql: 'SELECT table_name, table_type FROM information_schema.tables ORDER BY table_name', params: [] })),
  ...(await runRows(db, { sql: 'SELECT * FROM events ORDER BY uuid', params: [] })),
  ...(await runRows(db, { sql: 'SELECT * FROM persons ORDER BY id', params: [] })),
];
beforeAll(async () => {
  db = await openFixture();
  snapshot = await databaseState();
});
afterAll(() => db.closeSync());

const named = (cases: StatementCase[]) => cases.map((c) => [c.name, c] as const);

describe('compiled statements', () => {
  test.each(named(STATEMENT_CASES.filter((c) => c.error)))('400: %s', (_name, c) => {
    expect(errorOf(c)).toEqual({ kind: 'invalid_input', status: 400, ...c.error });
  });

  test.each(named(STATEMENT_CASES.filter((c) => c.sql || c.columns || c.types)))('exact: %s', (_name, c) => {
    const { compiled, statement } = statementFor(c, 'exact');
    if (c.sql) expect({ sql: statement.sql, params: statement.params }).toEqual(c.sql);
    if (c.columns) expect(compiled.columns).toEqual(c.columns);
    if (c.types) expect(compiled.types).toEqual(c.types);
  });
});

describe('each statement on the fixture', () => {
  test.each(named(STATEMENT_CASES.filter((c) => c.rows)))('%s', async (_name, c) => {
    const rows = await runRows(db, statementFor(c).statement);
    expect(rows).toEqual(c.rows!);
    // The same statement over team 1's rows alone: any difference would be another team's data.
    expect(await runRows(db, statementFor(c, 'team1').statement)).toEqual(rows);
  });

  test('every case has a known answer or error', () => {
    expect(STATEMENT_CASES.filter((c) => !c.error && !c.rows).map((c) => c.name)).toEqual([]);
  });
});

describe('injection probes', () => {
  const team1 = new Set([...FIXTURE_EVENTS, ...FIXTURE_PERSONS].filter((e) => e.team_id === 1).map((e) => ('uuid' in e ? e.uuid : e.id)));
  test.each(named(STATEMENT_CASES.filter((c) => c.probe)))('%s', async (_name, c) => {
    let statement;
    try {
      statement = statementFor(c).statement;
    } catch (error) {
      expect(error).toBeInstanceOf(AppError);
      expect((error as AppError).status).toBe(400);
      expect(c.error).toBeDefined();
      return;
    }
    expect(c.error).toBeUndefined();
    const rows = await runRows(db, statement);
    expect(await runRows(db, statementFor(c, 'team1').statement)).toEqual(rows);
    for (const [first] of rows) if (typeof first === 'string' && /^[expq]\d$/.test(first)) expect(team1.has(first)).toBe(true);
  });

  test('the database is unchanged', async () => {
    expect(await databaseState()).toEqual(snapshot);
  });
});
