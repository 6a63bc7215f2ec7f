import { storableJson } from '../../core/ingest/well-formed';
import { sql, trusted, type ClickHouseFeatures } from '../../core/query';
import { chunks } from '../chunks';
import type { PersonChanges, PersonMirror } from '../persons/types';
import type { ClickHouse } from './client';
import { timeFields, tsvField } from './events-table';

/**
 * Persons beside the events in ClickHouse, as PostHog keeps them: `persons` (one row per version
 * of a person) and `person_distinct_ids` (one row per version of a distinct id's link), both
 * ReplacingMergeTree(version). Rows are only ever inserted: an update is a row with a higher
 * version, a deletion (merged away, erased, unlinked) one with `is_deleted = 1`; reads take each
 * key's latest row (`argMax(…, version)`), which merges and FINAL agree with. The person store
 * writes them at every flush (PersonMirror); the events API joins them to the events.
 */
export function personsTablesDdl(f: ClickHouseFeatures, table: (name: string) => string): string[] {
  // As the events' times (schema.ts): 18.16 keeps the milliseconds in a column of their own.
  const created = f.datetime64 ? `created_at DateTime64(6, 'UTC')` : `created_at DateTime('UTC'), created_at_ms UInt16`;
  return [
    `CREATE TABLE IF NOT EXISTS ${table('persons')} (
      id UUID,
      team_id Int64,
      properties String,
      is_identified UInt8,
      ${created},
      is_deleted UInt8,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version) ORDER BY (team_id, id)`,
    `CREATE TABLE IF NOT EXISTS ${table('person_distinct_ids')} (
      team_id Int64,
      distinct_id String,
      person_id UUID,
      is_deleted UInt8,
      version UInt64
    ) ENGINE = ReplacingMergeTree(version) ORDER BY (team_id, distinct_id)`,
    // The projects whose persons were copied whole once (PersonMirror.seed).
    `CREATE TABLE IF NOT EXISTS ${table('person_copies')} (team_id Int64, copied_at DateTime) ENGINE = ReplacingMergeTree ORDER BY team_id`,
  ];
}

const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/**
 * Versions from the wall clock in microseconds, strictly increasing within the process and
 * starting above every version the tables hold (a restart after the clock stepped back must not
 * write rows that lose to older ones): of two writes of one row, the later wins, also across
 * processes whose clocks agree to a few ms (two processes change one person only through the
 * shared home, each after the other's notice).
 */
function versions(ch: ClickHouse, now: () => number): () => Promise<number> {
  let last = 0;
  let floor: Promise<void> | null = null;
  const highest = async () => {
    for (const name of ['persons', 'person_distinct_ids']) {
      const [row] = await ch.query<{ v: number | string }>(sql`SELECT max(version) AS v FROM ${trusted(ch.table(name))}`);
      last = Math.max(last, Number(row?.v ?? 0));
    }
  };
  return async () => {
    await (floor ??= highest().catch((error) => {
      floor = null;
      throw error;
    }));
    return (last = Math.max(last + 1, Math.floor(now() * 1000)));
  };
}

/**
 * Rows one INSERT carries at most. A flush is one INSERT per table (ClickHouse wants few, large
 * inserts); a project's first copy (`seed`) holds every person, and its rows as one text would
 * take several times the persons' own memory at once.
 */
export const MIRROR_INSERT_ROWS = 20_000;

/**
 * The person store's copy in ClickHouse (see PersonMirror): one INSERT per table per flush, a
 * flush larger than `rowsPerInsert` in several. `now`: the clock versions come from.
 */
export function clickhousePersonMirror(ch: ClickHouse, options: { now?: () => number; rowsPerInsert?: number } = {}): PersonMirror {
  const f = ch.features;
  const next = versions(ch, options.now ?? Date.now);
  const rowsPerInsert = options.rowsPerInsert ?? MIRROR_INSERT_ROWS;
  const personColumns = ['id', 'team_id', 'properties', 'is_identified', ...(f.datetime64 ? ['created_at'] : ['created_at', 'created_at_ms']), 'is_deleted', 'version'];
  const idColumns = ['team_id', 'distinct_id', 'person_id', 'is_deleted', 'version'];
  const bind = ch.dialect.bind;
  const mirror: PersonMirror = {
    async write(changes: PersonChanges) {
      const version = await next();
      for (const part of chunks(changes.persons, rowsPerInsert)) {
        const rows = part.map(({ teamId, uuid, person }) => {
          // A deleted person keeps no properties here: the tombstone is what reads find.
          const properties = person ? storableJson(person.properties, (fixed) => (person.properties = fixed)) : '{}';
          return `${tsvField(uuid)}\t${Math.trunc(teamId)}\t${tsvField(properties)}\t${person?.isIdentified ? 1 : 0}\t${timeFields(person?.createdAt ?? 0, f)}\t${person ? 0 : 1}\t${version}\n`;
        });
        await ch.insertTabSeparated(ch.table('persons'), personColumns, rows.join(''));
      }
      for (const part of chunks(changes.distinctIds, rowsPerInsert)) {
        // A distinct id is text from the capture decoder; one lone surrogate would fail every flush.
        const rows = part.map(
          ({ teamId, distinctId, personUuid }) => `${Math.trunc(teamId)}\t${tsvField(distinctId.toWellFormed())}\t${personUuid ?? NIL_UUID}\t${personUuid ? 0 : 1}\t${version}\n`,
        );
        await ch.insertTabSeparated(ch.table('person_distinct_ids'), idColumns, rows.join(''));
      }
    },
    async erase(teamId, uuid) {
      // Mutations, applied in the background: the tombstones written before already hide these rows from every read.
      const team = bind(teamId);
      const person = bind(uuid);
      await ch.command(sql`ALTER TABLE ${trusted(ch.table('persons'))} DELETE WHERE team_id = ${team} AND toString(id) = ${person} AND is_deleted = 0`);
      await ch.command(sql`ALTER TABLE ${trusted(ch.table('person_distinct_ids'))} DELETE WHERE team_id = ${team} AND toString(person_id) = ${person} AND is_deleted = 0`);
    },
    async deleteTeam(teamId) {
      for (const name of ['persons', 'person_distinct_ids', 'person_copies']) await ch.command(sql`ALTER TABLE ${trusted(ch.table(name))} DELETE WHERE team_id = ${bind(teamId)}`);
    },
    async seed(teamId, all) {
      const copies = trusted(ch.table('person_copies'));
      const [seen] = await ch.query<{ n: number | string }>(sql`SELECT count() AS n FROM ${copies} WHERE team_id = ${bind(teamId)}`);
      if (Number(seen?.n ?? 0) > 0) return;
      // The marker last: a seed cut short is made again whole at the next load.
      await mirror.write(all());
      await ch.command(sql`INSERT INTO ${copies} (team_id, copied_at) SELECT ${bind(teamId)}, now()`);
    },
  };
  return mirror;
}

/**
 * The relations the compiled statements read persons through, with the columns and types of
 * DuckDB's (persons/relations.ts). 18.16 takes one JOIN per SELECT, so each join is a SELECT of
 * its own over subqueries; the joined columns are Nullable, so an event without a person reads
 * NULL there as in DuckDB (a LEFT JOIN fills a missing row with the type's default).
 * `ALL INNER`, never `ANY INNER`, for a join whose left keys repeat: a modern server's ANY
 * INNER keeps one row per key on either side (several distinct ids of one person would be one).
 * Trusted SQL text: only the validated team id is inlined.
 */
export function clickhousePersonRelations(ch: ClickHouse) {
  const persons = ch.table('persons');
  const ids = ch.table('person_distinct_ids');
  const checkTeam = (teamId: number) => {
    if (!Number.isSafeInteger(teamId)) throw new Error('teamId must be an integer');
  };
  /** Each live person's latest row: `p_id` (text), `p_properties`, `p_created_at`, `p_is_identified`. */
  const livePersons = (teamId: number) =>
    `SELECT toString(id) AS p_id, argMax(properties, version) AS p_properties, argMax(created_at, version) AS p_created_at, ` +
    `argMax(is_identified, version) AS p_is_identified FROM ${persons} WHERE team_id = ${teamId} GROUP BY id HAVING argMax(is_deleted, version) = 0`;
  /** Each linked distinct id's person now: `distinct_id`, `p_id`. */
  const liveIds = (teamId: number) =>
    `SELECT distinct_id, toString(argMax(person_id, version)) AS p_id FROM ${ids} WHERE team_id = ${teamId} GROUP BY distinct_id HAVING argMax(is_deleted, version) = 0`;
  return {
    /** The events relation with `person_properties`, `person_created_at`, `person_is_identified` (see eventsWithPersons); `columns` are the events relation's. */
    joinPersons(eventsSql: string, teamId: number, columns: readonly string[]): string {
      checkTeam(teamId);
      const byDistinctId =
        `SELECT distinct_id, toNullable(p_properties) AS person_properties, toNullable(p_created_at) AS person_created_at, ` +
        `toNullable(p_is_identified) AS person_is_identified FROM (${liveIds(teamId)}) AS pdi ALL INNER JOIN (${livePersons(teamId)}) AS p USING p_id`;
      return `(SELECT ${[...columns, 'person_properties', 'person_created_at', 'person_is_identified'].join(', ')} FROM ${eventsSql} AS events_only ANY LEFT JOIN (${byDistinctId}) AS persons_now USING distinct_id)`;
    },
    /** One project's persons named `persons` (see personsRelation): with `distinctIds`, one row per distinct id and its `pdi_distinct_id`. */
    personsRelation(teamId: number, options: { distinctIds?: boolean } = {}): string {
      checkTeam(teamId);
      const columns = `${teamId} AS team_id, p_id AS id, p_created_at AS created_at, p_properties AS properties, p_is_identified AS is_identified`;
      const select = options.distinctIds
        ? `SELECT ${columns}, distinct_id AS pdi_distinct_id FROM (${livePersons(teamId)}) AS p ALL INNER JOIN (${liveIds(teamId)}) AS pdi USING p_id`
        : `SELECT ${columns} FROM (${livePersons(teamId)})`;
      return `(${select}) AS persons`;
    },
  };
}
