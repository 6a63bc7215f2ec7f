import { describe, expect, test } from 'bun:test';
import { assembleStatement, compileEventsQuery } from '../../../src/core/query';
import { FIXTURE_EVENTS, NOW } from './cases';
import { checkProbe, errorOf as errorOfCompile, fixtureForSuite, runRows } from './duckdb-fixture';
import { EVENTS_QUERY_CASES, type EventsQueryCase } from './events-query-cases';

const CONTEXT = { displayNameProperties: ['email', 'name', 'username'], testAccountFilters: [], personDistinctIds: null };

/** The statement storage would run for a case, for team 1, over the fixture's `relation`. */
function statementFor(c: EventsQueryCase, relation = 'events') {
  const compiled = compileEventsQuery(c.input, NOW, { ...CONTEXT, ...c.context });
  const limit = compiled.limit ?? 100;
  return { compiled, statement: assembleStatement(compiled.statement, { relation, teamId: 1, limit, offset: compiled.offset }) };
}

const errorOf = (c: EventsQueryCase) => errorOfCompile(() => statementFor(c));
const fixture = fixtureForSuite({ persons: false });

const named = (cases: EventsQueryCase[]) => cases.map((c) => [c.name, c] as const);

describe('compiled EventsQueries', () => {
  test.each(named(EVENTS_QUERY_CASES.filter((c) => c.error)))('400: %s', (_name, c) => {
    expect(errorOf(c)).toEqual({ kind: 'invalid_input', status: 400, ...c.error });
  });

  test.each(named(EVENTS_QUERY_CASES.filter((c) => c.sql || c.columns || c.types || c.hogql)))('exact: %s', (_name, c) => {
    const { compiled, statement } = statementFor(c);
    if (c.sql) expect({ sql: statement.sql, params: statement.params }).toEqual(c.sql);
    if (c.columns) expect(compiled.columns).toEqual(c.columns);
    if (c.types) expect(compiled.types).toEqual(c.types);
    if (c.hogql) expect(compiled.hogql(compiled.limit ?? 100, compiled.offset)).toEqual(c.hogql);
  });
});

describe('each EventsQuery on the fixture', () => {
  test.each(named(EVENTS_QUERY_CASES.filter((c) => c.rows)))('%s', async (_name, c) => {
    const rows = await runRows(fixture.db(), statementFor(c).statement);
    expect(rows).toEqual(c.rows!);
    // The same statement over team 1's rows alone: any difference would be another team's data.
    expect(await runRows(fixture.db(), statementFor(c, 'team1_events').statement)).toEqual(rows);
  });

  test('every case has a known answer, statement or error', () => {
    expect(EVENTS_QUERY_CASES.filter((c) => !c.error && !c.rows && !c.sql).map((c) => c.name)).toEqual([]);
  });
});

describe('injection probes', () => {
  const team1 = new Set(FIXTURE_EVENTS.filter((e) => e.team_id === 1).map((e) => e.uuid));
  test.each(named(EVENTS_QUERY_CASES.filter((c) => c.probe)))('%s', async (_name, c) => {
    await checkProbe(fixture.db(), c, () => ({ all: statementFor(c).statement, team1: statementFor(c, 'team1_events').statement }), team1, /^[ex]\d$/);
  });

  test('the database is unchanged', async () => {
    expect(await fixture.state()).toEqual(fixture.snapshot());
  });
});
