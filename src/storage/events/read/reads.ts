import { bind, DUCKDB, sql, trusted, type Dialect, type SqlFragment } from '../../../core/query';
import { AppError } from '../../../errors';
import type { Row, SqlParam } from '../../db';
import { eventsWithPersons, personsRelation } from '../../persons/relations';
import { duckdbValueNames } from './lookups';
import type { EventsRelation, StreamOptions, TimeRange } from './relation';
import type { EventStore, RelationOptions } from '../types';

/**
 * What the events API reads events through, whichever engine holds them: the embedded DuckDB
 * store, or a ClickHouse database (clickhouse/event-reads.ts). Statements are compiled for
 * `dialect` over the relations given here and run by `streamQuery`; the engine's errors come out
 * as AppErrors. The relations are trusted SQL text for `FROM … AS events` (validated integers
 * inlined only) and never leave storage's callers' statements.
 */
export interface EventReads {
  readonly dialect: Dialect;
  /**
   * The columns that together order events by time exactly, most significant first: `timestamp`,
   * or on a ClickHouse without DateTime64 (whole seconds) `timestamp` and `timestamp_ms`. A row
   * read with all of them has `timestamp` as the exact instant (the engine folds the rest in).
   */
  readonly timeColumns: readonly string[];
  /** An instant (epoch ms) as the values of `timeColumns`, in their order. */
  timeKey(ms: number): SqlFragment[];
  /** Wait until the team's acknowledged events can be read (bounded). */
  awaitVisible(teamId: number): Promise<void>;
  eventsRelation(teamId: number, range?: TimeRange, options?: RelationOptions): Promise<EventsRelation>;
  /** The team's rows in `range` as a relation already newest first, or null (see EventStore.newestFirstRelation). */
  newestFirstRelation(teamId: number, range: TimeRange, options?: Pick<RelationOptions, 'wait'>): Promise<string | null>;
  /** A statement's rows in chunks; aborting `signal` stops it. */
  streamQuery(sql: string, params?: readonly SqlParam[], options?: StreamOptions): AsyncIterableIterator<Row[]>;
  /** The events relation with each event's person columns (`person_properties`, …), from the persons kept beside the events. */
  joinPersons(eventsSql: string, teamId: number): string;
  /** One project's persons as `FROM` takes it (see personsRelation), from the persons kept beside the events. */
  personsRelation(teamId: number, options?: { distinctIds?: boolean }): string;
  /**
   * A statement giving one row per occurrence of a property's values (`name`) among the first
   * `scanLimit` events of `relation` meeting `scope`: a JSON list's elements, a string itself,
   * another value its JSON text (`/events/values/`; the JSON functions differ by engine).
   */
  propertyValueNames(relation: string, scope: SqlFragment, key: string, scanLimit: number): SqlFragment;
  /**
   * Whether the engine writes a statement's result straight into a file on this machine
   * (DuckDB's `COPY … TO`): a CSV export then has it write each slice. Otherwise the export's
   * rows are streamed from it and written here.
   */
  readonly writesFiles: boolean;
  /** The start of a row's bucket of `widthMs` (aligned on the epoch), in epoch ms, over the relation's columns. */
  timeBucket(widthMs: number): SqlFragment;
  /**
   * The distinct top-level property keys of `relation`'s rows meeting `scope`, at most `limit`
   * rows of them: a statement and how each of its rows gives keys (an engine that cannot list an
   * object's keys gives the rows' properties, whose keys are read here).
   */
  propertyKeys(relation: string, scope: SqlFragment, limit: number): PropertyKeysQuery;
  /** Throws a 400 when this engine cannot answer `feature` yet. */
  requireFeature(feature: ReadFeature): void;
}

export interface PropertyKeysQuery {
  statement: SqlFragment;
  keysOf(row: Row): Iterable<string>;
}

/** The top-level keys of a JSON object's text (none for anything else). */
export function jsonObjectKeys(text: unknown): string[] {
  if (typeof text !== 'string' || !text) return [];
  const value: unknown = JSON.parse(text);
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.keys(value) : [];
}

/** Features not every engine answers yet. */
export type ReadFeature = 'parquet_exports' | 'event_erasure';

const FEATURE_NAMES: Record<ReadFeature, string> = {
  parquet_exports: 'Parquet exports (format=parquet)',
  event_erasure: "Deleting a person's events (delete_events)",
};

/** The 400 of a feature an engine does not answer yet: said plainly, so a client knows it is not its request. */
export function unsupportedOnClickHouse(feature: ReadFeature): AppError {
  return new AppError('invalid_input', `${FEATURE_NAMES[feature]}: the ClickHouse events store does not support this yet.`);
}

const timestampText = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

/**
 * The DuckDB event store as read surface. Every call goes to `store` when it is made (tests
 * replace the store's `streamQuery` to record statements).
 */
export function duckdbEventReads(store: EventStore): EventReads {
  return {
    dialect: DUCKDB,
    timeColumns: ['timestamp'],
    timeKey: (ms) => [DUCKDB.instant(timestampText(ms), 'datetime')],
    awaitVisible: (teamId) => store.awaitVisible(teamId),
    eventsRelation: (teamId, range, options) => store.eventsRelation(teamId, range, options),
    newestFirstRelation: (teamId, range, options) => store.newestFirstRelation(teamId, range, options),
    streamQuery: (text, params, options) => store.streamQuery(text, params, options),
    joinPersons: eventsWithPersons,
    personsRelation,
    propertyValueNames: duckdbValueNames,
    writesFiles: true,
    timeBucket: (widthMs) => sql`CAST(floor(epoch_ms(timestamp) / ${bind(widthMs)}) AS BIGINT) * ${bind(widthMs)}`,
    propertyKeys: (relation, scope, limit) => ({
      statement: sql`SELECT DISTINCT unnest(json_keys(properties)) AS key FROM ${trusted(relation)} WHERE ${scope} LIMIT ${bind(limit)}`,
      keysOf: (row) => [String(row.key)],
    }),
    requireFeature: () => undefined,
  };
}
