import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import {
  assembleEventsQuery, compileEventFilters, compileSelect, type CompiledSelect, type SqlFragment,
} from '../../../src/core/query';
import { HOT_PROPERTIES } from '../../../src/core/events/columns';
import { FIXTURE_EVENTS, NOW, type QueryCase } from './cases';

/**
 * An in-memory events relation with the columns the compiler may reference (storage's real one
 * unions table, buffer and Parquet; the compiler cannot tell), plus `team1_events`, the same rows
 * restricted to team 1: a query that stays inside its team gives the same answer on both.
 */
export async function openFixture(): Promise<DuckDBConnection> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  await connection.run("SET TimeZone = 'UTC'");
  const hot = Object.values(HOT_PROPERTIES).map((c) => `${c} VARCHAR`).join(', ');
  await connection.run(`CREATE TABLE events (
    uuid VARCHAR, team_id INTEGER, event VARCHAR, distinct_id VARCHAR, person_id VARCHAR, properties VARCHAR,
    timestamp TIMESTAMP, created_at TIMESTAMP, elements_chain VARCHAR, ${hot}, person_properties VARCHAR)`);
  for (const e of FIXTURE_EVENTS) {
    await connection.run(
      `INSERT INTO events (uuid, team_id, event, distinct_id, person_id, properties, timestamp, created_at, elements_chain, person_properties)
       VALUES (?, ?, ?, ?, ?, ?, CAST(? AS TIMESTAMP), CAST(? AS TIMESTAMP), ?, ?)`,
      [e.uuid, e.team_id, e.event, e.distinct_id, e.person_id, JSON.stringify(e.properties), e.timestamp, e.timestamp,
        e.elements_chain ?? '', e.person_properties ? JSON.stringify(e.person_properties) : null] as DuckDBValue[],
    );
  }
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
