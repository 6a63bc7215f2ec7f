import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { DuckDBConnection } from '@duckdb/node-api';
import { AppError } from '../../../src/errors';
import { CASES, FIXTURE_EVENTS, type QueryCase } from './cases';
import { openFixture, runRows, statementFor } from './duckdb-fixture';
import { generatedProbes } from './probes';

const REQUEST_PARAMETERS = ['select', 'where', 'properties', 'event', 'distinct_id', 'person_id', 'after', 'before'];

let db: DuckDBConnection;
let snapshot: unknown[][];
beforeAll(async () => {
  db = await openFixture();
  snapshot = await databaseState();
});
afterAll(() => db.closeSync());

/** Every table and view, with every row: nothing a probe does may change any of it. */
async function databaseState(): Promise<unknown[][]> {
  const objects = await runRows(db, { sql: "SELECT table_name, table_type FROM information_schema.tables ORDER BY table_name", params: [] });
  const rows = await runRows(db, { sql: 'SELECT * FROM events ORDER BY uuid', params: [] });
  return [...objects, ...rows];
}

/**
 * The safety contract: a request is either refused with a 400 naming a request parameter, or it
 * compiles to SQL that DuckDB runs without error, returning only team 1's rows.
 */
async function expectSafe(c: QueryCase): Promise<'refused' | 'ran'> {
  let events;
  try {
    events = statementFor(c, 'events');
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    const e = error as AppError;
    expect({ kind: e.kind, status: e.status }).toEqual({ kind: 'invalid_input', status: 400 });
    expect(REQUEST_PARAMETERS).toContain(e.attr as string);
    return 'refused';
  }
  const rows = await runRows(db, events);
  expect(await runRows(db, statementFor(c, 'team1_events'))).toEqual(rows);
  if (!c.select) {
    const team1 = new Set(FIXTURE_EVENTS.filter((e) => e.team_id === 1).map((e) => e.uuid));
    for (const [uuid] of rows) expect(team1.has(uuid as string)).toBe(true);
  }
  return 'ran';
}

describe('injection probes', () => {
  test.each(CASES.filter((c) => c.probe).map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    expect(await expectSafe(c)).toBe(c.error ? 'refused' : 'ran');
    expect(await databaseState()).toEqual(snapshot);
  });
});

describe('generated probes', () => {
  const generated = generatedProbes();

  test('each is refused with a 400 or runs inside team 1, and the database is unchanged', async () => {
    const outcomes = { refused: 0, ran: 0 };
    for (const c of generated) outcomes[await expectSafe(c)]++;
    expect(await databaseState()).toEqual(snapshot);
    // Both outcomes must occur, or the generator is not probing the compiler.
    expect(outcomes.refused).toBeGreaterThan(100);
    expect(outcomes.ran).toBeGreaterThan(100);
  });
});
