import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import type { DuckDBConnection } from '@duckdb/node-api';
import { AppError } from '../../../src/errors';
import { CASES, FIXTURE_EVENTS, type QueryCase } from './cases';
import { openFixture, runRows, statementFor } from './duckdb-fixture';

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

/**
 * Seeded random expressions: a small grammar over hostile leaves, some then cut or spliced with a
 * hostile fragment. Far more shapes than the table lists by hand, hitting both outcomes.
 */
const LEAVES = [
  'event', 'distinct_id', 'timestamp', 'properties.$browser', 'properties.price', 'properties."\'; DROP TABLE events; --"',
  'person.properties.email', 'properties.`a/b`', "'x'", "'; DROP TABLE events; --'", "'ü😀\\0'", "'2024-01-01'", '1', '-1',
  '1e308', '99999999999999999999', 'now()', "'%'", "'\\\\'", 'properties.signup_date',
];
const HOSTILE_LEAVES = ['team_id', "read_csv('/etc/passwd')", "glob('*')", 'interval 1 day', 'null', 'true', 'count()'];
const ARITH = ['+', '-', '*', '/', '%'];
const COMPARE = ['=', '!=', '<', '>=', 'LIKE', 'NOT ILIKE'];
const SPLICES = [';', '--', '/*', ')', '(', "'", '"', '`', '?', 'SELECT 1', 'UNION SELECT *', ') OR (team_id = 2', '\\', 'ATTACH'];

function mulberry32(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('generated probes', () => {
  const random = mulberry32(20240110);
  const pick = <T,>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const value = (depth: number): string => {
    const r = random();
    if (r < 0.1) return pick(HOSTILE_LEAVES);
    if (depth === 0 || r < 0.6) return pick(LEAVES);
    if (r < 0.8) return `${value(depth - 1)} ${pick(ARITH)} ${value(depth - 1)}`;
    return `${pick(['lower', 'toDate', 'toString', 'toStartOfDay', 'toFloat'])}(${value(depth - 1)})`;
  };
  const condition = (depth: number): string => {
    const r = random();
    if (depth === 0 || r < 0.4) return `${value(1)} ${pick(COMPARE)} ${value(1)}`;
    if (r < 0.6) return `${condition(depth - 1)} ${pick(['AND', 'OR'])} ${condition(depth - 1)}`;
    if (r < 0.7) return `NOT (${condition(depth - 1)})`;
    if (r < 0.8) return `${value(1)} ${pick(['IN', 'NOT IN'])} (${pick(LEAVES)}, ${pick(LEAVES)})`;
    if (r < 0.9) return `${value(1)} IS ${pick(['', 'NOT '])}NULL`;
    return `match(${value(1)}, ${pick(["'^a'", "'('", "'(?i)x|y'"])})`;
  };
  const mutate = (text: string): string => {
    if (random() < 0.6) return text;
    const at = Math.floor(random() * (text.length + 1));
    return text.slice(0, at) + pick(SPLICES) + text.slice(at);
  };
  const generated: QueryCase[] = Array.from({ length: 600 }, (_, i) => ({
    name: `generated ${i}`,
    select: random() < 0.5 ? ['count()'] : [mutate(value(2))],
    where: [mutate(condition(2))],
  }));

  test('each is refused with a 400 or runs inside team 1, and the database is unchanged', async () => {
    const outcomes = { refused: 0, ran: 0 };
    for (const c of generated) outcomes[await expectSafe(c)]++;
    expect(await databaseState()).toEqual(snapshot);
    // Both outcomes must occur, or the generator is not probing the compiler.
    expect(outcomes.refused).toBeGreaterThan(100);
    expect(outcomes.ran).toBeGreaterThan(100);
  });
});
