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

/** The hot property keys, in the order of their columns (and of `StoredEventRow.hot`). */
export const HOT_PROPERTY_KEYS = Object.keys(HOT_PROPERTIES) as HotProperty[];

/** Hot property values in `HOT_PROPERTY_KEYS` order: what `json_extract_string` gives for each. */
export type HotValues = readonly (string | null)[];

/**
 * Extract the hot values from the parsed properties object (ingestion already has it parsed, so
 * storage never parses the JSON again). Mirrors `json_extract_string(properties, '/<key>')`:
 * absent or null gives NULL, a string itself, anything else its JSON text.
 */
export function hotValuesOf(properties: Readonly<Record<string, unknown>>): HotValues {
  const out: (string | null)[] = [];
  for (const key of HOT_PROPERTY_KEYS) {
    const v = properties[key];
    out.push(v === undefined || v === null ? null : typeof v === 'string' ? v : JSON.stringify(v));
  }
  return out;
}

/** An event ready to be stored: normalized by ingestion, one row of the events relation. */
export interface StoredEventRow {
  uuid: string;
  teamId: number;
  event: string;
  distinctId: string;
  personId: string | null;
  /**
   * The properties object as compact JSON text (as `JSON.stringify` writes it: serialized once,
   * on the ingest path). Storage keeps it verbatim and never parses it.
   */
  properties: string;
  /** Epoch milliseconds, UTC. */
  timestamp: number;
  /** Epoch milliseconds, UTC. */
  createdAt: number;
  elementsChain: string;
  /** The hot property values (`hotValuesOf(properties)`); when absent, storage extracts them itself. */
  hot?: HotValues;
}
