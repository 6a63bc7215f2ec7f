import { Session } from 'chdb';
import { HOT_PROPERTIES, hotValuesOf } from '../../../src/core/events/columns';
import {
  assembleEventsQuery, compileEventFilters, compileSelect, type CompiledSelect, type Dialect, type SqlFragment,
} from '../../../src/core/query';
import { FIXTURE_EVENTS, FIXTURE_PERSONS, NOW, type QueryCase } from './cases';

/**
 * The fixture of duckdb-fixture.ts in ClickHouse (chDB, in process): the same rows under the same
 * relation names, in the types a ClickHouse events table has (DateTime64(6, 'UTC'), Nullable where
 * DuckDB allows NULL, UInt8 for booleans, properties as JSON text).
 */
export function openChdbFixture(): Session {
  const session = new Session();
  const hot = Object.values(HOT_PROPERTIES).map((c) => `${c} Nullable(String)`).join(', ');
  session.query(`CREATE TABLE events (
    uuid String, team_id Int64, event String, distinct_id String, person_id Nullable(String), properties String,
    timestamp DateTime64(6, 'UTC'), created_at DateTime64(6, 'UTC'), elements_chain String, ${hot}, person_properties Nullable(String),
    person_created_at Nullable(DateTime64(6, 'UTC')), person_is_identified Nullable(UInt8)) ENGINE = Memory`);
  const hotNames = Object.values(HOT_PROPERTIES);
  const rows = FIXTURE_EVENTS.map((e) => {
    const person = FIXTURE_PERSONS.find((p) => p.id === e.person_id);
    const values = hotValuesOf(e.properties);
    return {
      uuid: e.uuid, team_id: e.team_id, event: e.event, distinct_id: e.distinct_id, person_id: e.person_id,
      properties: JSON.stringify(e.properties), timestamp: e.timestamp, created_at: e.timestamp, elements_chain: e.elements_chain ?? '',
      ...Object.fromEntries(hotNames.map((name, i) => [name, values[i]])),
      person_properties: e.person_properties ? JSON.stringify(e.person_properties) : null,
      person_created_at: person?.created_at ?? null, person_is_identified: person ? Number(person.is_identified) : null,
    };
  });
  session.query(`INSERT INTO events FORMAT JSONEachRow ${rows.map((r) => JSON.stringify(r)).join('\n')}`);
  session.query("CREATE TABLE persons (team_id Int64, id String, created_at DateTime64(6, 'UTC'), properties String, is_identified UInt8) ENGINE = Memory");
  session.query('CREATE TABLE pdi (team_id Int64, distinct_id String, person_id String) ENGINE = Memory');
  const persons = FIXTURE_PERSONS.map((p) => ({ team_id: p.team_id, id: p.id, created_at: p.created_at, properties: JSON.stringify(p.properties), is_identified: Number(p.is_identified) }));
  session.query(`INSERT INTO persons FORMAT JSONEachRow ${persons.map((r) => JSON.stringify(r)).join('\n')}`);
  const pdi = FIXTURE_PERSONS.flatMap((p) => p.distinct_ids.map((d) => ({ team_id: p.team_id, distinct_id: d, person_id: p.id })));
  session.query(`INSERT INTO pdi FORMAT JSONEachRow ${pdi.map((r) => JSON.stringify(r)).join('\n')}`);
  session.query('CREATE VIEW persons_pdi AS SELECT persons.*, pdi.distinct_id AS pdi_distinct_id FROM persons JOIN pdi ON pdi.person_id = persons.id');
  session.query('CREATE VIEW team1_persons AS SELECT * FROM persons WHERE team_id = 1');
  session.query('CREATE VIEW team1_persons_pdi AS SELECT * FROM persons_pdi WHERE team_id = 1');
  session.query('CREATE VIEW team1_events AS SELECT * FROM events WHERE team_id = 1');
  return session;
}

/** A case's statement in a dialect: what duckdb-fixture's `statementFor` builds for DuckDB. */
export function statementIn(dialect: Dialect, c: QueryCase, relation: string): { statement: SqlFragment; types: string[] | null } {
  const filters = compileEventFilters(c.filters ?? {}, NOW, { dialect });
  const select: CompiledSelect | null = c.select ? compileSelect(c.select, c.where ?? [], NOW, dialect) : null;
  const statement = assembleEventsQuery({
    relation, teamId: 1, filters, select, columns: ['uuid'], orderBy: c.orderBy ?? (select ? undefined : 'timestamp DESC'), limit: 1000, dialect,
  });
  return { statement, types: select?.types ?? null };
}

/**
 * Runs a statement rendered for ClickHouse and gives its rows as duckdb-fixture's `runRows` does:
 * booleans (UInt8) as true/false, DateTime and Date as ISO text, 64-bit integers as numbers.
 */
export function runChdbRows(session: Session, dialect: Dialect, statement: SqlFragment): unknown[][] {
  const rendered = dialect.render(statement);
  const settings = ' SETTINGS output_format_json_quote_64bit_integers = 0';
  const text = session.queryBind(rendered.sql + settings, rendered.params, 'JSONCompactEachRowWithNamesAndTypes');
  const [, types, ...rows] = text.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as unknown[]);
  return rows.map((row) => row.map((value, i) => plain(value, String(types?.[i]))));
}

function plain(value: unknown, type: string): unknown {
  if (value === null) return null;
  if (/^(Nullable\()?Bool|^(Nullable\()?UInt8/.test(type)) return value === 1 || value === true;
  if (/DateTime/.test(type)) return new Date(`${String(value).replace(' ', 'T')}Z`).toISOString();
  if (/^(Nullable\()?Date\b/.test(type)) return new Date(`${String(value)}T00:00:00Z`).toISOString();
  return value;
}
