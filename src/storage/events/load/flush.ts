import type { DuckDBConnection } from '@duckdb/node-api';
import { inTransaction, type Database } from '../../db';
import { writeDeadLetter } from '../log/dead-letters';
import { fileList, type ParquetFile } from '../tiers/parquet';
import { registerFiles } from '../tiers/manifest';
import { writeParquet } from '../tiers/parquet-write';
import type { PropertyKeysByDay } from '../process/processed-copy';
import { FIELD, NULL_MARK, QUOTE, LINE_COLUMNS } from '../log/row-lines';
import { readLinesSql, LINES_TO_EVENT_SELECT, linesToEventSelect } from './line-sql';

/**
 * Loading WAL segments. DuckDB reads the segment files itself (its CSV reader), and the rows
 * become visible in ONE transaction with the `applied_segment` watermark: a crash either keeps
 * the whole load (recovery deletes the files) or none of it (recovery loads them again):
 * exactly once.
 *
 * Two targets. Small loads (age-based flushes, a query waiting for its rows) are inserted into
 * `events_hot`. Large loads are written straight to Parquet and registered in the same
 * transaction as the watermark: inserting ~1 KB rows into a DuckDB table costs more than the
 * Parquet write itself, and DuckDB's next checkpoint rewrites them once more (insert, checkpoint
 * and the later compaction together cost a multiple of one direct Parquet write's CPU; see
 * bench/NOTES.md).
 *
 * Dedupe (client retries): a cheap first pass over the uuid column counts uuids repeated within
 * the load, already in the hot table, or in Parquet files of rows loaded lately (the dedupe window);
 * only when it finds any does the load take the filtering plan (DISTINCT ON + anti-joins). What
 * the recent-uuid filter vouches for is not read (`PriorRows.fresh`, `hotCovered`, `uuidGen` of
 * the files): under steady ingestion, usually the whole pass.
 */
export interface LoadOptions {
  /** Write Parquet files instead of inserting into the hot table. */
  toParquet: boolean;
  root: string;
  /** Where a retry's original may already be: its Parquet files (see `PriorRows`). */
  prior: PriorRows;
  /** The store's clock: when the files written were made (their age counts for merges and the dedupe window). */
  now: () => number;
  /** Every row came from the intake processor: properties need no check as JSON (`linesToEventSelect`). */
  checkedJson?: boolean;
  /** The rows' property keys, known from processing: the files written are registered with them. */
  propertyKeys?: PropertyKeysByDay;
}

/**
 * Parquet files a load checks uuids against: those of rows loaded lately whatever their time (the
 * dedupe window), and older files whose time range overlaps the load's events, read only within
 * `[lo, hi]` so DuckDB skips the row groups outside it (files are sorted by time).
 */
export interface PriorRows {
  recent: readonly ParquetFile[];
  older: readonly ParquetFile[];
  /** The load's event-time span (epoch ms); null reads the older files whole. */
  span: readonly [number, number] | null;
  /**
   * The load's uuids were certainly new when added to the recent-uuid filter (recent-uuids.ts):
   * no repeats among them, none in what the filter covers (those files are left out of
   * `recent` and `older`).
   */
  fresh?: boolean;
  /** Fresh, and every row of the hot table was added to the filter in a generation it still holds: no need to read it. */
  hotCovered?: boolean;
}

const NO_PRIOR: PriorRows = { recent: [], older: [], span: null };

const tsAt = (ms: number) => `make_timestamp(${Math.trunc(ms)}::BIGINT * 1000)`;

/** A relation with the `uuid` of every prior row, or null when there are no prior files. */
function priorUuids(root: string, prior: PriorRows): string | null {
  const parts: string[] = [];
  if (prior.recent.length) parts.push(`SELECT uuid FROM read_parquet(${fileList(root, prior.recent)})`);
  if (prior.older.length) {
    const within = prior.span ? ` WHERE timestamp >= ${tsAt(prior.span[0])} AND timestamp <= ${tsAt(prior.span[1])}` : '';
    parts.push(`SELECT uuid FROM read_parquet(${fileList(root, prior.older)})${within}`);
  }
  return parts.length ? `(${parts.join(' UNION ALL ')})` : null;
}

export interface LoadResult {
  inserted: number;
  files: ParquetFile[];
}

function dedupedSource(source: string, prior: PriorRows, root: string, filter: boolean): string {
  if (!filter) return source;
  const rel = priorUuids(root, prior);
  const notRecent = rel ? ` AND NOT EXISTS (SELECT 1 FROM ${rel} p WHERE p.uuid = n.uuid)` : '';
  return `(SELECT * FROM (SELECT DISTINCT ON (uuid) * FROM ${source}) n WHERE NOT EXISTS (SELECT 1 FROM events_hot h WHERE h.uuid = n.uuid)${notRecent})`;
}

async function countDuplicates(c: DuckDBConnection, source: string, prior: PriorRows, root: string): Promise<number> {
  const rel = priorUuids(root, prior);
  // Nothing the filter cannot vouch for: not even the load's own uuids need reading.
  if (prior.fresh && prior.hotCovered && !rel) return 0;
  // A fresh load has no repeats among its rows (the filter saw them all): that count is skipped.
  const counts: string[] = [];
  if (!prior.fresh) counts.push('(SELECT count(*) - count(DISTINCT uuid) FROM n)');
  if (!prior.hotCovered) counts.push('(SELECT count(*) FROM n SEMI JOIN events_hot h ON h.uuid = n.uuid)');
  if (rel) counts.push(`(SELECT count(*) FROM n SEMI JOIN ${rel} p ON p.uuid = n.uuid)`);
  const sql = `WITH n AS MATERIALIZED (SELECT uuid FROM ${source}) SELECT ${counts.join(' + ')}`;
  return Number((await c.runAndReadAll(sql)).getRowsJS()[0][0]);
}

const setApplied = (seg: number) => `UPDATE event_store_state SET applied_segment = greatest(applied_segment, ${seg}::BIGINT) WHERE id = 1`;

/** Only move the watermark: segments whose capture requests produced no rows. */
export async function markApplied(db: Database, watermark: number): Promise<void> {
  await db.transaction((tx) => tx.run(setApplied(watermark)));
}

/** Fast path: load segment files in one statement; throws (and changes nothing) on any bad row. */
export async function loadSegments(db: Database, files: readonly string[], watermark: number, options: LoadOptions): Promise<LoadResult> {
  const source = readLinesSql(files);
  if (!options.toParquet) {
    return db.withWriter((c) =>
      inTransaction(c, async () => {
        const filter = (await countDuplicates(c, source, options.prior, options.root)) > 0;
        const result = await c.run(`INSERT INTO events_hot SELECT ${LINES_TO_EVENT_SELECT}, ${watermark}::BIGINT AS _seg FROM ${dedupedSource(source, options.prior, options.root, filter)}`);
        await c.run(setApplied(watermark));
        return { inserted: result.rowsChanged, files: [] };
      }),
    );
  }
  // On the writer although it only reads: loads must not wait behind long exports holding
  // every reader connection (that would turn a slow export into 503s for ingestion).
  const written = await db.withWriter(async (c) => {
    const filter = (await countDuplicates(c, source, options.prior, options.root)) > 0;
    const select = `SELECT ${linesToEventSelect(options.checkedJson)}, CAST(make_timestamp(ts_ms * 1000) AS DATE) AS _day FROM ${dedupedSource(source, options.prior, options.root, filter)} ORDER BY team_id, ts_ms DESC`;
    const files = await writeParquet(c, options.root, select, `l${watermark}`, options.now, onlyPartition(options.propertyKeys));
    // Rows dropped as repeats may have had keys no kept row has: such files are listed from their rows.
    return filter || !options.propertyKeys ? files : withKeys(files, options.propertyKeys);
  });
  await db.transaction(async (tx) => {
    await registerFiles(tx, written);
    await tx.run(setApplied(watermark));
  });
  return { inserted: written.reduce((n, f) => n + f.rows, 0), files: written };
}

/** The one team-day of a load's rows, when processing gave their keys and they are all of one (the usual load of a one-project server). */
function onlyPartition(keys: PropertyKeysByDay | undefined): { teamId: number; day: string } | undefined {
  if (!keys || keys.size !== 1) return undefined;
  const [[teamId, days]] = keys;
  if (days.size !== 1) return undefined;
  const [[day]] = days;
  return { teamId, day: new Date(day * DAY_MS).toISOString().slice(0, 10) };
}

/** The files with the keys processing gave for their team-day (a file of a team-day it has none for is left to be listed). */
function withKeys(files: readonly ParquetFile[], keys: PropertyKeysByDay): ParquetFile[] {
  return files.map((f) => {
    const set = keys.get(f.teamId)?.get(Date.parse(`${f.day}T00:00:00Z`) / DAY_MS);
    return set ? { ...f, propertyKeys: [...set].sort() } : f;
  });
}

const DAY_MS = 86_400_000;

const GOOD_ROW =
  'uuid IS NOT NULL AND team_id IS NOT NULL AND ts_ms BETWEEN -62135596800000 AND 253402300799999 ' +
  'AND created_ms BETWEEN -62135596800000 AND 253402300799999 AND coalesce(json_valid(properties), false)';

export interface SalvageResult {
  inserted: number;
  rejected: number;
}

/**
 * Slow path for a segment the fast path refused: read it tolerantly, insert the good rows, and
 * dead-letter the rest with DuckDB's reason. The dead letter is durable before the load commits,
 * and its id is derived from the segment, so a crash in between rewrites the same entry.
 */
export async function salvageSegment(db: Database, dataDir: string, segment: { id: number; path: string }, root = '', prior: PriorRows = NO_PRIOR): Promise<SalvageResult> {
  return db.withWriter(async (c) => {
    await c.run('DROP TABLE IF EXISTS temp._wal_rejects');
    await c.run('DROP TABLE IF EXISTS temp._wal_scans');
    const tolerant = readLinesSql([segment.path], ", ignore_errors = true, store_rejects = true, rejects_table = '_wal_rejects', rejects_scan = '_wal_scans'");
    await c.run(`CREATE OR REPLACE TEMP TABLE _wal_rows AS SELECT * FROM ${tolerant}`);
    try {
      const bad = (await c.runAndReadAll(`SELECT * FROM _wal_rows WHERE NOT (${GOOD_ROW})`)).getRowsJS();
      const rejects = (
        await c.runAndReadAll(
          `SELECT line, first(csv_line ORDER BY column_idx) AS csv_line, first(error_message ORDER BY column_idx) AS message FROM _wal_rejects GROUP BY line ORDER BY line`,
        )
      ).getRowObjectsJS();
      const lines: string[] = [];
      const errors: Array<{ line: string; message: string }> = [];
      for (const row of bad) {
        lines.push(encodeFields(row as Array<string | number | bigint | null>));
        if (errors.length < 20) errors.push({ line: lines[lines.length - 1].slice(0, 200), message: describeBadRow(row) });
      }
      for (const r of rejects) {
        lines.push(`${String(r.csv_line)}\n`);
        if (errors.length < 20) errors.push({ line: String(r.csv_line).slice(0, 200), message: String(r.message) });
      }
      if (lines.length > 0) {
        await writeDeadLetter(
          dataDir,
          { id: `rows-${segment.id}`, reason: `DuckDB rejected ${lines.length} row(s) of WAL segment ${segment.id}`, rows: lines.length, source: 'rows', segment: segment.id, errors },
          Buffer.from(lines.join('')),
        );
      }
      const inserted = await inTransaction(c, async () => {
        const result = await c.run(
          `INSERT INTO events_hot SELECT ${LINES_TO_EVENT_SELECT}, ${segment.id}::BIGINT AS _seg FROM ${dedupedSource(`(SELECT * FROM _wal_rows WHERE ${GOOD_ROW})`, prior, root, true)}`,
        );
        await c.run(setApplied(segment.id));
        return result.rowsChanged;
      });
      return { inserted, rejected: lines.length };
    } finally {
      await c.run('DROP TABLE IF EXISTS temp._wal_rows').catch(() => undefined);
    }
  });
}

function describeBadRow(row: readonly unknown[]): string {
  const names = LINE_COLUMNS.map(([n]) => n);
  const get = (n: string) => row[names.indexOf(n)];
  if (get('uuid') == null) return 'missing uuid';
  if (get('team_id') == null) return 'missing team id';
  if (get('ts_ms') == null || get('created_ms') == null) return 'timestamp missing or out of range';
  return 'properties are not valid JSON';
}

const CONTROL = /[\x00-\x1f]/;

/** Re-encode a row read back from a WAL file as a WAL line. */
export function encodeFields(values: ReadonlyArray<string | number | bigint | null>): string {
  let out = '';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) out += FIELD;
    if (v == null) out += NULL_MARK;
    else {
      const s = String(v);
      out += CONTROL.test(s) ? QUOTE + s.replaceAll(QUOTE, QUOTE + QUOTE) + QUOTE : s;
    }
  }
  return `${out}\n`;
}
