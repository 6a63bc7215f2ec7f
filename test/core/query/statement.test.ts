import { describe, expect, test } from 'bun:test';
import { assembleStatement, compileStatement } from '../../../src/core/query';
import { FIXTURE_EVENTS, FIXTURE_PERSONS, NOW } from './cases';
import { checkProbe, errorOf as errorOfCompile, fixtureForSuite, runRows } from './duckdb-fixture';
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

const errorOf = (c: StatementCase) => errorOfCompile(() => statementFor(c));
const fixture = fixtureForSuite({ persons: true });

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
    const rows = await runRows(fixture.db(), statementFor(c).statement);
    expect(rows).toEqual(c.rows!);
    // The same statement over team 1's rows alone: any difference would be another team's data.
    expect(await runRows(fixture.db(), statementFor(c, 'team1').statement)).toEqual(rows);
  });

  test('every case has a known answer or error', () => {
    expect(STATEMENT_CASES.filter((c) => !c.error && !c.rows).map((c) => c.name)).toEqual([]);
  });
});

describe('injection probes', () => {
  const team1 = new Set([...FIXTURE_EVENTS, ...FIXTURE_PERSONS].filter((e) => e.team_id === 1).map((e) => ('uuid' in e ? e.uuid : e.id)));
  test.each(named(STATEMENT_CASES.filter((c) => c.probe)))('%s', async (_name, c) => {
    await checkProbe(fixture.db(), c, () => ({ all: statementFor(c).statement, team1: statementFor(c, 'team1').statement }), team1, /^[expq]\d$/);
  });

  test('the database is unchanged', async () => {
    expect(await fixture.state()).toEqual(fixture.snapshot());
  });
});
