/**
 * Tests the ClickHouse + PostgreSQL profile (test/storage/clickhouse-profile.test.ts) skips:
 * they need what only the DuckDB event store has, or what the ClickHouse store does not answer
 * yet. Each is skipped with its reason in its name, so the profile's output lists them all.
 */

/** Whether this run keeps the apps' events in ClickHouse (HOGBASE_TEST_EVENTS_STORE=clickhouse, see test-app.ts). */
export const eventsProfile = process.env.HOGBASE_TEST_EVENTS_STORE === 'clickhouse';

export interface DuckdbOnly {
  /** For `test.skipIf` / `describe.skipIf`. */
  readonly skip: boolean;
  /** The title, with the reason in the profile. */
  label(title: string): string;
}

export function duckdbOnly(reason: string): DuckdbOnly {
  return { skip: eventsProfile, label: (title) => (eventsProfile ? `${title} [not in the ClickHouse profile: ${reason}]` : title) };
}

export const PARQUET_EXPORTS = duckdbOnly('format=parquet is a 400 on ClickHouse');
export const DUCKDB_FILES = duckdbOnly("about the DuckDB store's own Parquet files");
/**
 * The profile's server is 18.16: no DateTime64, so a selected time is whole seconds there (the
 * milliseconds are a column of their own, which bounds compare with but a select does not show).
 */
export const WHOLE_SECONDS = duckdbOnly('ClickHouse 18.16 selects times in whole seconds (no DateTime64)');
export const DUCKDB_LIMITS = duckdbOnly("about a limit of DuckDB's own types");
