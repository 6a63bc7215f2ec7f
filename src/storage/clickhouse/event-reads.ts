import { HOT_PROPERTIES } from '../../core/events/columns';
import { clampClickHouseTime, clickhouseLiteral, sql, trusted, type SqlFragment } from '../../core/query';
import { AppError } from '../../errors';
import type { Row } from '../db';
import type { EventsRelation, TimeRange } from '../events/read/relation';
import type { RelationOptions } from '../events/types';
import { jsonObjectKeys, unsupportedOnClickHouse, type EventReads, type ReadFeature } from '../events/read/reads';
import type { ClickHouse } from './client';
import { clickhousePersonRelations } from './persons-table';

/**
 * The events API's reads answered from ClickHouse's `events` table (schema.ts). The relation
 * has the columns and types the compiled statements expect of `events` (EVENT_COLUMNS: uuid and
 * person_id as text, properties as JSON text, the hot properties as Nullable(String)), and reads
 * the table `FINAL`: a load retried after an unknown outcome wrote its rows twice, and only FINAL
 * shows them once before the merges do.
 *
 * Persons are read from the copy the person store keeps beside the events (persons-table.ts).
 * What is not here yet: Parquet exports (18.16 has no Parquet format, and a modern server's file
 * would not be the DuckDB store's), and per-file counts (a count is a plain `count()`: ClickHouse answers it from its own marks).
 * Deleting a person's events is answered where the owner says so (`answers`).
 */
export interface ClickHouseReadsOptions {
  /** Wait until the team's acknowledged events are in the table (the writer's business; nothing to wait for without it). */
  awaitVisible?: (teamId: number) => Promise<void>;
  /** Features answered here beyond reads (`event_erasure`: the owner deletes a person's events in this table); none by default. */
  answers?: readonly ReadFeature[];
}

/** A person has a handful of distinct ids; beyond this many the time-ordered table is read (the statement's own condition still picks the rows). */
const PERSON_IDS_MAX = 100;

const ms = (v: number | Date): number => {
  const n = Math.round(v instanceof Date ? v.getTime() : v);
  if (!Number.isSafeInteger(n)) throw new AppError('invalid_input', 'Invalid time range bound.', 'timestamp');
  return n;
};

export function openClickHouseEventReads(ch: ClickHouse, options: ClickHouseReadsOptions = {}): EventReads {
  const { datetime64 } = ch.features;
  const table = ch.table('events');
  const personTable = ch.table('events_by_person');
  // Where DateTime holds whole seconds (18.16), `timestamp_ms` is the rest: ordering and cursors need both.
  const timeColumns = datetime64 ? ['timestamp'] : ['timestamp', 'timestamp_ms'];
  const names = ['uuid', 'team_id', 'event', 'distinct_id', 'person_id', 'properties', ...timeColumns, 'created_at', 'elements_chain', ...Object.values(HOT_PROPERTIES)];
  const columns = names.map((c) => (c === 'uuid' || c === 'person_id' ? `toString(${c}) AS ${c}` : c)).join(', ');
  const persons = clickhousePersonRelations(ch);
  // Exact bounds in milliseconds; on 18.16 the seconds column bounds them first, which the primary key can use.
  const exactMs = '(toUInt64(toUnixTimestamp(timestamp)) * 1000 + timestamp_ms)';
  // The second of 18.16's DateTime holding `at` (a time outside its range wraps around; stored times are clamped alike).
  const second = (at: number) => Math.floor(clampClickHouseTime(at, false) / 1000);
  const bounds = (range: TimeRange): string[] => {
    const out: string[] = [];
    if (range.from !== undefined) {
      const from = ms(range.from);
      out.push(datetime64 ? `timestamp >= fromUnixTimestamp64Milli(toInt64(${from}), 'UTC')` : `timestamp >= toDateTime(${second(from)}, 'UTC') AND ${exactMs} >= ${from}`);
    }
    if (range.to !== undefined) {
      const to = ms(range.to);
      out.push(datetime64 ? `timestamp < fromUnixTimestamp64Milli(toInt64(${to}), 'UTC')` : `timestamp <= toDateTime(${second(to - 1)}, 'UTC') AND ${exactMs} < ${to}`);
    }
    return out;
  };
  const relation = (teamId: number, range: TimeRange = {}, { distinctIds, onePerUuid }: RelationOptions = {}): EventsRelation => {
    if (!Number.isSafeInteger(teamId)) throw new AppError('invalid_input', 'Invalid project id.', 'team_id');
    const where = [`team_id = ${teamId}`, ...bounds(range)];
    // A person's rows from the person-ordered copy (schema.ts): one range of its key instead of the
    // project's whole time range. The ids must be in this subquery: neither 18.16 nor FINAL pushes
    // the statement's own `distinct_id = …` into it. They are written as literals with the escaping
    // every value gets on 18.16 (clickhouseLiteral), as a relation is text without parameters.
    const byPerson = distinctIds !== undefined && distinctIds.length > 0 && distinctIds.length <= PERSON_IDS_MAX;
    if (byPerson) where.push(`distinct_id IN (${distinctIds.map(clickhouseLiteral).join(', ')})`);
    return {
      // FINAL merges every row of the range before the statement's `uuid IN (…)` narrows them (18.16
      // pushes nothing into it): a caller that keeps one row per uuid does not need it.
      sql: `(SELECT ${columns} FROM ${byPerson ? personTable : table}${onePerUuid ? '' : ' FINAL'} WHERE ${where.join(' AND ')})`,
      params: [],
      // No files: a count is one statement (counts.ts).
      files: [],
      parts: () => {
        throw new Error('a ClickHouse relation has no per-file parts');
      },
      newestFirst: () => null,
    };
  };
  const instant = (at: number) => new Date(at).toISOString().replace('T', ' ').replace('Z', '');
  return {
    dialect: ch.dialect,
    timeColumns,
    timeKey: (at) => (datetime64 ? [ch.dialect.instant(instant(at), 'datetime')] : [ch.dialect.instant(instant(at), 'datetime'), ch.dialect.bind(((at % 1000) + 1000) % 1000)]),
    awaitVisible: async (teamId) => {
      await options.awaitVisible?.(teamId);
    },
    eventsRelation: async (teamId, range, relationOptions) => {
      if (relationOptions?.wait !== false) await options.awaitVisible?.(teamId);
      return relation(teamId, range, relationOptions);
    },
    newestFirstRelation: async () => null,
    streamQuery: (text, params = [], streamOptions = {}) => foldTimes(ch.stream({ sql: text, params: params as SqlFragment['params'] } satisfies SqlFragment, streamOptions), !datetime64),
    joinPersons: (eventsSql, teamId) => persons.joinPersons(eventsSql, teamId, names),
    personsRelation: (teamId, relationOptions) => persons.personsRelation(teamId, relationOptions),
    propertyValueNames: (rel, scope, key, scanLimit) => clickhouseValueNames(ch, rel, scope, key, scanLimit),
    writesFiles: false,
    timeBucket: (widthMs) => {
      const at = datetime64 ? 'toUnixTimestamp64Milli(timestamp)' : exactMs;
      return sql`intDiv(${trusted(at)}, ${ch.dialect.bind(widthMs)}) * ${ch.dialect.bind(widthMs)}`;
    },
    propertyKeys: (rel, scope, limit) =>
      ch.features.jsonExtract
        ? {
            statement: sql`SELECT DISTINCT arrayJoin(JSONExtractKeys(properties)) AS key FROM ${trusted(rel)} WHERE ${scope} LIMIT ${ch.dialect.bind(limit)}`,
            keysOf: (row) => [String(row.key)],
          }
        : // 18.16 has no function listing an object's keys: the rows' properties come back, read here.
          { statement: sql`SELECT properties FROM ${trusted(rel)} WHERE ${scope}`, keysOf: (row) => jsonObjectKeys(row.properties) },
    requireFeature: (feature) => {
      if (!options.answers?.includes(feature)) throw unsupportedOnClickHouse(feature);
    },
  };
}

/** On 18.16, a row read with `timestamp_ms` has it folded into `timestamp` (the exact instant), as EventReads.timeColumns promises. */
async function* foldTimes(rows: AsyncIterableIterator<Row[]>, fold: boolean): AsyncIterableIterator<Row[]> {
  for await (const chunk of rows) {
    if (fold) {
      for (const row of chunk) {
        if (row.timestamp instanceof Date && typeof row.timestamp_ms === 'number') {
          row.timestamp = new Date(row.timestamp.getTime() + row.timestamp_ms);
          delete row.timestamp_ms;
        }
      }
    }
    yield chunk;
  }
}


/**
 * `/events/values/`'s occurrences of a property's values (see EventReads.propertyValueNames). A
 * JSON list gives its elements where the server has JSONExtractArrayRaw; 18.16 has no function
 * that splits one, and gives the list's JSON text as one value.
 */
function clickhouseValueNames(ch: ClickHouse, relation: string, scope: SqlFragment, key: string, scanLimit: number): SqlFragment {
  const d = ch.dialect;
  const properties = trusted('properties');
  const limit = sql`LIMIT ${d.bind(scanLimit)}`;
  if (!ch.features.jsonExtract) {
    return sql`SELECT ${d.jsonText(properties, [key])} AS name FROM ${trusted(relation)} WHERE ${scope} AND ${d.jsonHas(properties, [key])} ${limit}`;
  }
  const k = d.bind(key);
  const values = sql`SELECT JSONExtractRaw(properties, ${k}) AS v FROM ${trusted(relation)} WHERE ${scope} AND JSONHas(properties, ${d.bind(key)}) ${limit}`;
  const items = sql`SELECT arrayJoin(if(JSONType(v) = 'Array', JSONExtractArrayRaw(v), [v])) AS item FROM (${values})`;
  return sql`SELECT multiIf(JSONType(item) = 'String', JSONExtractString(item), JSONType(item) = 'Null', NULL, item) AS name FROM (${items})`;
}
