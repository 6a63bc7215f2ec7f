import type { Session } from 'chdb';
import { chdbSession } from '../../helpers/chdb';
import { HOT_PROPERTIES, hotValuesOf } from '../../../src/core/events/columns';
import {
  assembleEventsQuery, compileEventFilters, compileSelect, type CompiledSelect, type Dialect, type SqlFragment,
} from '../../../src/core/query';
import { FIXTURE_EVENTS, FIXTURE_PERSONS, NOW, type QueryCase } from './cases';

/**
 * The fixture of duckdb-fixture.ts in ClickHouse: the same rows under the same relation names, in
 * the types a ClickHouse events table has (Nullable where DuckDB allows NULL, UInt8 for booleans,
 * properties as JSON text), with DateTime64(6) timestamps, or for 18.16 DateTime ones (whole
 * seconds and the milliseconds in `timestamp_ms`, as storage's 18.16 events table keeps them; the
 * 18.16 spelling on chDB reads that column too).
 */
export function fixtureStatements(datetime64: boolean): string[] {
  const time = datetime64 ? "DateTime64(6, 'UTC')" : "DateTime('UTC')";
  const at = (text: string) => (datetime64 ? text : text.slice(0, 19));
  const hot = Object.values(HOT_PROPERTIES).map((c) => `${c} Nullable(String)`).join(', ');
  const hotNames = Object.values(HOT_PROPERTIES);
  const events = FIXTURE_EVENTS.map((e) => {
    const person = FIXTURE_PERSONS.find((p) => p.id === e.person_id);
    const values = hotValuesOf(e.properties);
    return {
      uuid: e.uuid, team_id: e.team_id, event: e.event, distinct_id: e.distinct_id, person_id: e.person_id,
      properties: JSON.stringify(e.properties), timestamp: at(e.timestamp), timestamp_ms: millisecondsOf(e.timestamp), created_at: at(e.timestamp), elements_chain: e.elements_chain ?? '',
      ...Object.fromEntries(hotNames.map((name, i) => [name, values[i]])),
      person_properties: e.person_properties ? JSON.stringify(e.person_properties) : null,
      person_created_at: person ? at(person.created_at) : null, person_is_identified: person ? Number(person.is_identified) : null,
    };
  });
  const persons = FIXTURE_PERSONS.map((p) => ({ team_id: p.team_id, id: p.id, created_at: at(p.created_at), properties: JSON.stringify(p.properties), is_identified: Number(p.is_identified) }));
  const pdi = FIXTURE_PERSONS.flatMap((p) => p.distinct_ids.map((d) => ({ team_id: p.team_id, distinct_id: d, person_id: p.id })));
  const insert = (table: string, rows: object[]) => `INSERT INTO ${table} FORMAT JSONEachRow ${rows.map((r) => JSON.stringify(r)).join('\n')}`;
  return [
    `CREATE TABLE events (
      uuid String, team_id Int64, event String, distinct_id String, person_id Nullable(String), properties String,
      timestamp ${time}, timestamp_ms UInt16, created_at ${time}, elements_chain String, ${hot}, person_properties Nullable(String),
      person_created_at Nullable(${time}), person_is_identified Nullable(UInt8)) ENGINE = Memory`,
    insert('events', events),
    `CREATE TABLE persons (team_id Int64, id String, created_at ${time}, properties String, is_identified UInt8) ENGINE = Memory`,
    'CREATE TABLE pdi (team_id Int64, distinct_id String, person_id String) ENGINE = Memory',
    insert('persons', persons),
    insert('pdi', pdi),
    'CREATE VIEW persons_pdi AS SELECT persons.*, pdi.distinct_id AS pdi_distinct_id FROM persons JOIN pdi ON pdi.person_id = persons.id',
    'CREATE VIEW team1_persons AS SELECT * FROM persons WHERE team_id = 1',
    'CREATE VIEW team1_persons_pdi AS SELECT * FROM persons_pdi WHERE team_id = 1',
    'CREATE VIEW team1_events AS SELECT * FROM events WHERE team_id = 1',
  ];
}

/** The milliseconds of a fixture time (`…:SS.ffffff`). */
const millisecondsOf = (text: string): number => Math.floor(Number(`0${text.slice(19, 26) || '.0'}`) * 1000 + 1e-9);

/** The fixture in chDB (ClickHouse 26.7 in process). */
export function openChdbFixture(): Session {
  const session = chdbSession();
  for (const statement of fixtureStatements(true)) session.query(statement);
  return session;
}

/** A case's statement in a dialect: what duckdb-fixture's `statementFor` builds for DuckDB. */
export function statementIn(dialect: Dialect, c: QueryCase, relation: string): SqlFragment {
  const filters = compileEventFilters(c.filters ?? {}, NOW, { dialect });
  const select: CompiledSelect | null = c.select ? compileSelect(c.select, c.where ?? [], NOW, dialect) : null;
  return assembleEventsQuery({
    relation, teamId: 1, filters, select, columns: ['uuid'], orderBy: c.orderBy ?? (select ? undefined : 'timestamp DESC'), limit: 1000, dialect,
  });
}

/** Output settings both versions know: 64-bit integers as JSON numbers. */
export const OUTPUT_SETTINGS = { output_format_json_quote_64bit_integers: '0' };

/** Runs a statement rendered for ClickHouse on chDB; rows as duckdb-fixture's `runRows` gives them. */
export function runChdbRows(session: Session, dialect: Dialect, statement: SqlFragment): unknown[][] {
  const rendered = dialect.render(statement);
  const text = session.queryBind(`${rendered.sql} SETTINGS output_format_json_quote_64bit_integers = 0`, rendered.params, 'JSONCompact');
  return plainRows(text);
}

/**
 * A `JSONCompact` answer as duckdb-fixture's rows: booleans (UInt8) as true/false, DateTime and
 * Date as ISO text, 64-bit integers as numbers.
 */
export function plainRows(text: string): unknown[][] {
  const { meta, data } = JSON.parse(text) as { meta: Array<{ type: string }>; data: unknown[][] };
  return data.map((row) => row.map((value, i) => plain(value, meta[i]!.type)));
}

function plain(value: unknown, type: string): unknown {
  if (value === null) return null;
  if (/^(Nullable\()?(Bool|UInt8)/.test(type)) return value === 1 || value === true;
  if (/DateTime/.test(type)) return new Date(`${String(value).replace(' ', 'T')}Z`).toISOString();
  if (/^(Nullable\()?Date\b/.test(type)) return new Date(`${String(value)}T00:00:00Z`).toISOString();
  return value;
}
