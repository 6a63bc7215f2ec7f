import type { Migration } from '../../migrations';

/**
 * Events tables (versions 200–249; 250–299 are reserved for persons).
 *
 * - `events_hot`: the native tier. Small loads of WAL segments land here (`_seg` is the load's
 *   segment watermark) and leave for Parquet on compaction; large loads go straight to Parquet. Its strings are stored uncompressed: the tier is
 *   transient (rows stay minutes), and DuckDB's string compression (FSST and dictionary
 *   analysis) on ~1 KB JSON slows inserts markedly (see bench/NOTES.md). Parquet holds the
 *   compressed copy.
 * - `event_parquet_files`: the manifest. A Parquet file is part of the events relation only
 *   when its row is committed here, so a half-written or orphaned file is never read.
 * - `event_store_state`: one row of watermarks. `applied_segment` is updated in the same
 *   transaction that inserts a segment's rows (exactly-once replay); `compacted_segment` in the
 *   transaction that registers its Parquet files; `purged_segment` once hot copies are deleted.
 * - `event_file_property_keys`: a sidecar of the manifest, the property keys (`json_keys`) that
 *   occur in a registered file. Files never change, so an entry stays true for the file's life;
 *   entries are made in the background (off the write path) and removed with the file's manifest
 *   row. A file without an entry is simply read (a CSV export's header pass scans it), so a
 *   missing or lost entry costs time, never a wrong answer.
 * - `event_parquet_files.sorted`: false for a file whose rows may not be newest first throughout:
 *   runs that overlap in time (a merge concatenates its inputs instead of sorting them), or a
 *   file written before its order was checked (migration 204; the maintenance reads it once and
 *   sets the flag back when its rows are in order). It is read like any other, only never in
 *   place of a sort (`EventsRelation.newestFirst`).
 * - `event_person_files`: person-clustered copies of settled team-days (`person-copies.ts`), each
 *   with the primary files whose rows it holds (`sources`). At most one per team-day; a copy
 *   whose sources are not all registered is simply not read.
 */
export const eventMigrations: Migration[] = [
  {
    version: 200,
    name: 'event store: hot table, parquet manifest, watermarks',
    statements: [
      `CREATE TABLE events_hot (
        uuid VARCHAR USING COMPRESSION uncompressed,
        team_id INTEGER,
        event VARCHAR USING COMPRESSION uncompressed,
        distinct_id VARCHAR USING COMPRESSION uncompressed,
        person_id VARCHAR USING COMPRESSION uncompressed,
        properties JSON USING COMPRESSION uncompressed,
        timestamp TIMESTAMP,
        created_at TIMESTAMP,
        elements_chain VARCHAR USING COMPRESSION uncompressed,
        mat_browser VARCHAR USING COMPRESSION uncompressed,
        mat_os VARCHAR USING COMPRESSION uncompressed,
        mat_current_url VARCHAR USING COMPRESSION uncompressed,
        mat_session_id VARCHAR USING COMPRESSION uncompressed,
        _seg BIGINT
      )`,
      `CREATE TABLE event_parquet_files (
        path VARCHAR PRIMARY KEY,
        team_id INTEGER NOT NULL,
        day DATE NOT NULL,
        min_ts TIMESTAMP NOT NULL,
        max_ts TIMESTAMP NOT NULL,
        rows BIGINT NOT NULL,
        bytes BIGINT NOT NULL,
        created_at TIMESTAMP NOT NULL
      )`,
      `CREATE TABLE event_store_state (
        id INTEGER PRIMARY KEY,
        applied_segment BIGINT NOT NULL,
        compacted_segment BIGINT NOT NULL,
        purged_segment BIGINT NOT NULL
      )`,
      `INSERT INTO event_store_state VALUES (1, 0, 0, 0)`,
    ],
  },
  {
    version: 201,
    name: 'event store: property keys per parquet file',
    statements: [`CREATE TABLE event_file_property_keys (path VARCHAR PRIMARY KEY, keys VARCHAR[] NOT NULL)`],
  },
  {
    version: 202,
    name: 'event store: person-clustered copies of settled days',
    statements: [
      `CREATE TABLE event_person_files (
        path VARCHAR PRIMARY KEY,
        team_id INTEGER NOT NULL,
        day DATE NOT NULL,
        min_ts TIMESTAMP NOT NULL,
        max_ts TIMESTAMP NOT NULL,
        rows BIGINT NOT NULL,
        bytes BIGINT NOT NULL,
        created_at TIMESTAMP NOT NULL,
        sources VARCHAR[] NOT NULL
      )`,
    ],
  },
  {
    version: 203,
    name: 'event store: files whose rows are sorted runs',
    statements: [`ALTER TABLE event_parquet_files ADD COLUMN sorted BOOLEAN DEFAULT true`],
  },
  {
    version: 204,
    name: 'event store: files written before their order was checked, read as runs',
    // Loads and compactions with more than one DuckDB thread, and rewrites of a person's rows
    // out of a file, could write runs yet register the file as sorted (parquet-write.ts
    // `sortFile`, erasure.ts `personCondition`); which ones is not known without reading them.
    // Reads stay correct either way: an export sorts what it cannot scan in order. The
    // maintenance then reads each such file once, and registers those in order as sorted again
    // (manifest.ts `confirmSorted`).
    statements: [`UPDATE event_parquet_files SET sorted = false`],
  },
];
