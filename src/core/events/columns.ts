/**
 * The stored event as every layer sees it: the column names of the events relation that storage
 * exposes to queries (native table, buffer and Parquet files unioned), and the hot properties that
 * are materialized as their own columns so filters on them skip JSON parsing.
 *
 * Column types (DuckDB): uuid VARCHAR, team_id INTEGER, event VARCHAR, distinct_id VARCHAR,
 * person_id VARCHAR (uuid text, may be NULL), properties JSON (text), timestamp TIMESTAMP (UTC,
 * no zone), created_at TIMESTAMP (UTC), elements_chain VARCHAR (may be ''), and one VARCHAR per
 * hot property holding exactly `json_extract_string(properties, '/<key>')`.
 */
export const HOT_PROPERTIES = {
  $browser: 'mat_browser',
  $os: 'mat_os',
  $current_url: 'mat_current_url',
  $session_id: 'mat_session_id',
} as const satisfies Record<string, string>;

export type HotProperty = keyof typeof HOT_PROPERTIES;

export const hotColumnFor = (key: string): string | undefined =>
  Object.prototype.hasOwnProperty.call(HOT_PROPERTIES, key) ? HOT_PROPERTIES[key as HotProperty] : undefined;

/** Columns of the events relation, in storage order. */
export const EVENT_COLUMNS = [
  'uuid',
  'team_id',
  'event',
  'distinct_id',
  'person_id',
  'properties',
  'timestamp',
  'created_at',
  'elements_chain',
  ...Object.values(HOT_PROPERTIES),
] as const;

/** An event ready to be stored: normalized by ingestion, one row of the events relation. */
export interface StoredEventRow {
  uuid: string;
  teamId: number;
  event: string;
  distinctId: string;
  personId: string | null;
  /** The properties object serialized as JSON text (serialized once, on the ingest path). */
  properties: string;
  /** Epoch milliseconds, UTC. */
  timestamp: number;
  /** Epoch milliseconds, UTC. */
  createdAt: number;
  elementsChain: string;
}
