import { afterAll, beforeAll, expect } from 'bun:test';
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import {
  assembleEventsQuery, compileEventFilters, compileSelect, type CompiledSelect, type SqlFragment,
} from '../../../src/core/query';
import { HOT_PROPERTIES } from '../../../src/core/events/columns';
import { AppError } from '../../../src/errors';
import { FIXTURE_EVENTS, FIXTURE_PERSONS, NOW, type QueryCase } from './cases';

/**
 * An in-memory events relation with the columns the compiler may reference (storage's real one
 * unions table, buffer and Parquet; the compiler cannot tell), plus `team1_events`, the same rows
 * restricted to team 1: a query that stays inside its team gives the same answer on both. Persons
 * likewise: `persons` and `team1_persons`, and with their distinct ids joined (`persons_pdi`,
 * `team1_persons_pdi`), the columns of storage's persons relations.
 */
export async function openFixture(): Promise<DuckDBConnection> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  await connection.run("SET TimeZone = 'UTC'");
  const hot = Object.values(HOT_PROPERTIES).map((c) => `${c} VARCHAR`).join(', ');
  await connection.run(`CREATE TABLE events (
    uuid VARCHAR, team_id INTEGER, event VARCHAR, distinct_id VARCHAR, person_id VARCHAR, properties VARCHAR,
    timestamp TIMESTAMP, created_at TIMESTAMP, elements_chain VARCHAR, ${hot}, person_properties VARCHAR,
    person_created_at TIMESTAMP, person_is_identified BOOLEAN)`);
  for (const e of FIXTURE_EVENTS) {
    const person = FIXTURE_PERSONS.find((p) => p.id === e.person_id);
    await connection.run(
      `INSERT INTO events (uuid, team_id, event, distinct_id, person_id, properties, timestamp, created_at, elements_chain, person_properties,
         person_created_at, person_is_identified)
       VALUES (?, ?, ?, ?, ?, ?, CAST(? AS TIMESTAMP), CAST(? AS TIMESTAMP), ?, ?, CAST(? AS TIMESTAMP), ?)`,
      [e.uuid, e.team_id, e.event, e.distinct_id, e.person_id, JSON.stringify(e.properties), e.timestamp, e.timestamp,
        e.elements_chain ?? '', e.person_properties ? JSON.stringify(e.person_properties) : null,
        person?.created_at ?? null, person?.is_identified ?? null] as DuckDBValue[],
    );
  }
  await connection.run('CREATE TABLE persons (team_id INTEGER, id VARCHAR, created_at TIMESTAMP, properties VARCHAR, is_identified BOOLEAN)');
  await connection.run('CREATE TABLE pdi (team_id INTEGER, distinct_id VARCHAR, person_id VARCHAR)');
  for (const p of FIXTURE_PERSONS) {
    await connection.run('INSERT INTO persons VALUES (?, ?, CAST(? AS TIMESTAMP), ?, ?)', [p.team_id, p.id, p.created_at, JSON.stringify(p.properties), p.is_identified]);
    for (const d of p.distinct_ids) await connection.run('INSERT INTO pdi VALUES (?, ?, ?)', [p.team_id, d, p.id]);
  }
  await connection.run('CREATE VIEW persons_pdi AS SELECT persons.*, pdi.distinct_id AS pdi_distinct_id FROM persons JOIN pdi ON pdi.person_id = persons.id');
  await connection.run('CREATE VIEW team1_persons AS SELECT * FROM persons WHERE team_id = 1');
  await connection.run('CREATE VIEW team1_persons_pdi AS SELECT * FROM persons_pdi WHERE team_id = 1');
  for (const [key, columnName] of Object.entries(HOT_PROPERTIES)) {
    await connection.run(`UPDATE events SET ${columnName} = json_extract_string(properties, ?)`, [`/${key}`]);
  }
  await connection.run('CREATE VIEW team1_events AS SELECT * FROM events WHERE team_id = 1');
  return connection;
}

/** The statement storage would run for a case: select cases give their columns, filter cases uuids. */
export function statementFor(c: QueryCase, relation: string): SqlFragment {
  const filters = compileEventFilters(c.filters ?? {}, NOW);
  const select: CompiledSelect | null = c.select ? compileSelect(c.select, c.where ?? [], NOW) : null;
  return assembleEventsQuery({
    relation, teamId: 1, filters, select, columns: ['uuid'], orderBy: c.orderBy ?? (select ? undefined : 'timestamp DESC'), limit: 1000,
  });
}

export async function runRows(connection: DuckDBConnection, statement: SqlFragment): Promise<unknown[][]> {
  const reader = await connection.runAndReadAll(statement.sql, statement.params as DuckDBValue[]);
  return reader.getRowsJS().map((row) => row.map(plain));
}

/** BIGINT → number, TIMESTAMP/DATE → ISO text: answers are written as plain JSON in cases.ts. */
function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.toISOString();
  return value;
}

/** A compile error as the API would give it (kind, status, attr, detail), or 'no error'. */
export function errorOf(compile: () => unknown): unknown {
  try {
    compile();
  } catch (error) {
    return error instanceof AppError ? { kind: error.kind, status: error.status, attr: error.attr, detail: error.detail } : error;
  }
  return 'no error';
}

/**
 * The fixture database for a suite, with `state()` (its tables, events and, with `persons`, its
 * persons) and `snapshot()` (that state when it was opened): a statement must never change it.
 */
export function fixtureForSuite(options: { persons: boolean }) {
  let db: DuckDBConnection;
  let snapshot: unknown[][];
  const state = async () => [
    ...(await runRows(db, { sql: 'SELECT table_name, table_type FROM information_schema.tables ORDER BY table_name', params: [] })),
    ...(await runRows(db, { sql: 'SELECT * FROM events ORDER BY uuid', params: [] })),
    ...(options.persons ? await runRows(db, { sql: 'SELECT * FROM persons ORDER BY id', params: [] }) : []),
  ];
  beforeAll(async () => {
    db = await openFixture();
    snapshot = await state();
  });
  afterAll(() => db.closeSync());
  return { db: () => db, state, snapshot: () => snapshot };
}

/**
 * An injection probe: refused with a 400 (and then the case expects an error), or run with the
 * same rows over every team's relation as over team 1's alone, every id it returns team 1's.
 */
export async function checkProbe(
  db: DuckDBConnection,
  c: { error?: unknown },
  statements: () => { all: SqlFragment; team1: SqlFragment },
  team1Ids: ReadonlySet<string>,
  idPattern: RegExp,
): Promise<void> {
  let built;
  try {
    built = statements();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).status).toBe(400);
    expect(c.error).toBeDefined();
    return;
  }
  expect(c.error).toBeUndefined();
  const rows = await runRows(db, built.all);
  expect(await runRows(db, built.team1)).toEqual(rows);
  for (const [first] of rows) if (typeof first === 'string' && idPattern.test(first)) expect(team1Ids.has(first)).toBe(true);
}
