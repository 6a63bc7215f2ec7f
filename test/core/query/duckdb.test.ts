import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { DuckDBConnection } from '@duckdb/node-api';
import { CASES, REGEX_CASES } from './cases';
import { openFixture, runRows, statementFor } from './duckdb-fixture';

let db: DuckDBConnection;
beforeAll(async () => {
  db = await openFixture();
});
afterAll(() => db.closeSync());

describe('each case on the fixture', () => {
  const runnable = CASES.filter((c) => !c.error && (c.rows || c.uuids));
  test.each(runnable.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const rows = await runRows(db, statementFor(c, 'events'));
    expect(rows).toEqual(c.rows ?? (c.uuids ?? []).map((u) => [u]));
    // The same statement over team 1's rows alone: any difference would be another team's data.
    expect(await runRows(db, statementFor(c, 'team1_events'))).toEqual(rows);
  });

  test('every non-error case has a known answer', () => {
    expect(CASES.filter((c) => !c.error && !c.rows && !c.uuids).map((c) => c.name)).toEqual([]);
  });
});

describe("checkRe2Syntax agrees with DuckDB's RE2", () => {
  test.each(REGEX_CASES)('%p valid: %p', async (pattern, valid) => {
    let accepted = true;
    try {
      await db.run('SELECT regexp_matches(?, ?)', ['abc', pattern]);
    } catch {
      accepted = false;
    }
    expect(accepted).toBe(valid);
  });
});
