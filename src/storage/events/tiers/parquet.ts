import { mkdir, readdir, rm, rmdir } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { Database } from '../../db';
import { sqlString } from '../../sql-literal';

/**
 * Parquet files (zstd), partitioned by team and day (of the event timestamp), sorted by time
 * newest first in row groups of `ROW_GROUP_ROWS` (`parquet-write.ts`; a `timestamp DESC` top-N
 * reads the first group of the newest file and skips the rest by their min/max statistics), under
 * `<dataDir>/events/parquet/<teamId>/<yyyy-mm-dd>/<tag>-<n>.parquet`: every path part comes from
 * an integer, a date or our own tag, never from a user string. Files are written into a temporary
 * directory and renamed into place (`parquet-write.ts`), and are part of the events relation only
 * once registered in the manifest (`manifest.ts`), in the same transaction as the watermark that
 * says which rows they hold. A crash leaves at worst unregistered files, which are never read and
 * are removed at the next start (`removeOrphans`).
 */
export interface ParquetFile {
  /** Relative to the Parquet root. */
  path: string;
  teamId: number;
  day: string;
  minTs: number;
  maxTs: number;
  rows: number;
  bytes: number;
  /** Epoch ms when the file was registered (merge and person-copy ages; the dedupe window's stand-in for `loadedAt`). */
  createdAt: number;
  /**
   * The property keys occurring in the file's rows (sorted), once the background indexing has
   * listed them (`event_file_property_keys`); undefined until then.
   */
  propertyKeys?: readonly string[];
  /**
   * False when the rows may not be newest first throughout: runs that overlap in time (a merge
   * concatenates its inputs, see `mergeFiles`), or a file registered before its order was
   * checked (migration 204) and not read since (`confirmSorted`); absent or true: the whole file
   * is sorted newest first. Either way
   * its row groups each hold a narrow time range, which is what a top-N and a time filter skip
   * by; only a read that relies on the file's order (`newestFirst`) needs it sorted.
   */
  sorted?: boolean;
  /**
   * The oldest recent-uuid filter generation its rows were added in (RecentUuids), known for
   * files written in this process from filtered rows; absent otherwise (then never "covered").
   */
  uuidGen?: number;
  /**
   * When its newest rows were loaded (epoch ms): set by a merge (its newest input's: a merge writes
   * rows loaded a while ago) and a compaction of hot rows (its newest load's), kept by an
   * erasure's rewrite. Absent, `createdAt` stands for it: exact for a load's file, later than the
   * rows were loaded for one from before a restart (so they are read more, never less). The load
   * dedupe's window asks for files holding rows loaded lately (`Tiers.recentFiles`), not for
   * files written lately.
   */
  loadedAt?: number;
}

/** When a file's newest rows were loaded, as far as is known (never earlier than they were). */
export const rowsLoadedAt = (f: Pick<ParquetFile, 'loadedAt' | 'createdAt'>): number => f.loadedAt ?? f.createdAt;

export const parquetRoot = (dataDir: string): string => join(dataDir, 'events', 'parquet');
/** Where files are written before they are renamed into place (`parquet-write.ts`); left over only by a crash. */
export const TMP_PREFIX = '.tmp-';

/** Remove temporary directories and files the manifest does not know (crash leftovers). */
export async function removeOrphans(dataDir: string, manifest: readonly ParquetFile[]): Promise<number> {
  const root = parquetRoot(dataDir);
  await mkdir(root, { recursive: true });
  for (const name of await readdir(root)) {
    if (name.startsWith(TMP_PREFIX)) await rm(join(root, name), { recursive: true, force: true });
  }
  return removeUnknownFiles(root, new Set(manifest.map((f) => f.path)));
}

/**
 * Delete every file under `root` whose path (relative to it) is not in `known`, then the
 * directories left empty (days that retention emptied: they stay while the server runs, since a
 * load may rename a file into one at any moment). Only at start, before any load. Returns how
 * many files went.
 */
export async function removeUnknownFiles(root: string, known: ReadonlySet<string>): Promise<number> {
  let removed = 0;
  const dirs: string[] = [];
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isDirectory()) dirs.push(path);
    if (!entry.isFile()) continue;
    if (!known.has(relative(root, path))) {
      await rm(path, { force: true });
      removed++;
    }
  }
  // Deepest first, so a team's directory goes once its days have.
  for (const dir of dirs.sort((a, b) => b.length - a.length)) await rmdir(dir).catch(() => undefined);
  return removed;
}

export const fileList = (root: string, files: readonly ParquetFile[]): string => `[${files.map((f) => sqlString(join(root, f.path))).join(', ')}]`;

/** Unregister and delete every Parquet file of a team. */
export async function deleteTeamFiles(db: Database, dataDir: string, teamId: number, manifest: readonly ParquetFile[]): Promise<void> {
  const files = manifest.filter((f) => f.teamId === teamId);
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM event_file_property_keys WHERE path IN (SELECT path FROM event_parquet_files WHERE team_id = ?)', [teamId]);
    await tx.run('DELETE FROM event_parquet_files WHERE team_id = ?', [teamId]);
  });
  for (const f of files) await rm(join(parquetRoot(dataDir), f.path), { force: true });
  await rm(join(parquetRoot(dataDir), String(teamId)), { recursive: true, force: true });
}

/**
 * Whether a file's rows are newest first, read without trusting its registration: `read` (a
 * `read_parquet` with `filename` and `file_row_number`) as rows with the time of the row before
 * each in its file (`withTimeBefore`), and `NEWEST_FIRST` true per file (grouped by `filename`)
 * when no row is newer than the one before it. A partitioned write with several threads, or a
 * plan that joins, gives up an ORDER BY (see parquet-write.ts `sortFile`).
 */
export const withTimeBefore = (read: string): string =>
  `(SELECT filename, timestamp, lag(timestamp) OVER (PARTITION BY filename ORDER BY file_row_number) AS before FROM ${read})`;
export const NEWEST_FIRST = 'count(*) FILTER (WHERE before < timestamp) = 0';
