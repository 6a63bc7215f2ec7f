import { syncDir } from '../log/fs-sync';
import { mkdir, readdir, rename, rm, rmdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Database, Tx } from '../../db';
import { sqlString } from '../../sql-literal';

/**
 * Parquet files (zstd), partitioned by team and day (of the event timestamp), sorted by time
 * newest first in row groups of `ROW_GROUP_ROWS` (a `timestamp DESC` top-N reads the first group of
 * the newest file and skips the rest by their min/max statistics), under `<dataDir>/events/parquet/<teamId>/<yyyy-mm-dd>/<tag>-<n>.parquet`: every path part
 * comes from an integer, a date or our own tag, never from a user string. Files are written
 * into a temporary directory and renamed into place, and are part of the events relation only
 * once registered in the manifest (`event_parquet_files`), in the same transaction as the
 * watermark that says which rows they hold. A crash leaves at worst unregistered files, which
 * are never read and are removed at the next start.
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
  /** Epoch ms when the file was registered (dedupe window, merge age). */
  createdAt: number;
  /**
   * The property keys occurring in the file's rows (sorted), once the background indexing has
   * listed them (`event_file_property_keys`); undefined until then.
   */
  propertyKeys?: readonly string[];
  /**
   * False when the rows are runs, each sorted newest first, that overlap in time (what merges of
   * earlier versions wrote when they concatenated overlapping files; the next merge that takes
   * the file sorts it, see `mergeFiles`); absent or true: the whole file is sorted newest first.
   * Either way its row groups each hold a narrow time range, which is what a top-N and a time
   * filter skip by; only a read that relies on the file's order (`newestFirst`) needs it sorted.
   */
  sorted?: boolean;
  /**
   * The oldest recent-uuid filter generation its rows were added in (RecentUuids), known for
   * files written in this process from filtered rows; absent otherwise (then never "covered").
   */
  uuidGen?: number;
}

export const parquetRoot = (dataDir: string): string => join(dataDir, 'events', 'parquet');
const TMP_PREFIX = '.tmp-';
const PARTITION_RE = /team_id=(\d+)[/\\]_day=(\d{4}-\d{2}-\d{2})[/\\][^/\\]+\.parquet$/;


/** A manifest row as `loadManifest` and `loadPersonCopies` select it (times as epoch ms). */
export interface ManifestRow {
  path: string;
  team_id: number;
  day: string;
  min_ts: number;
  max_ts: number;
  rows: number;
  bytes: number;
  created: number;
}

/** The columns of a manifest row, from a table with the manifest's layout. */
export const MANIFEST_COLUMNS = `strftime(day, '%Y-%m-%d') AS day, team_id, epoch_ms(min_ts) AS min_ts, epoch_ms(max_ts) AS max_ts, rows, bytes, epoch_ms(created_at) AS created`;

export const fileOfRow = (r: ManifestRow): ParquetFile => ({
  path: r.path,
  teamId: r.team_id,
  day: r.day,
  minTs: r.min_ts,
  maxTs: r.max_ts,
  rows: r.rows,
  bytes: r.bytes,
  createdAt: r.created,
});

export async function loadManifest(db: Database): Promise<ParquetFile[]> {
  // Sidecar entries of files no longer registered (a crash between the two deletes) go first.
  await db.run('DELETE FROM event_file_property_keys WHERE path NOT IN (SELECT path FROM event_parquet_files)');
  const rows = await db.query<ManifestRow & { keys: string[] | null; sorted: boolean | null }>(
    `SELECT f.path, ${MANIFEST_COLUMNS}, f.sorted, k.keys FROM event_parquet_files f LEFT JOIN event_file_property_keys k ON k.path = f.path ORDER BY team_id, min_ts`,
  );
  return rows.map((r) => ({ ...fileOfRow(r), ...(r.sorted === false ? { sorted: false } : {}), ...(r.keys ? { propertyKeys: [...r.keys].sort() } : {}) }));
}

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

/**
 * Rows per Parquet row group. A list page fetches its rows by time, and DuckDB decompresses the
 * whole row group of each (its ~1 KB properties): a page costs a fraction of what it cost with
 * groups four times this size, for slightly larger files, the same write speed, and a somewhat
 * slower full column scan (see bench/NOTES.md).
 */
const ROW_GROUP_ROWS = 4096;

/**
 * zstd level 1 (DuckDB's default is 3): writes are faster, and on the bench's events the files
 * even came out smaller (see bench/NOTES.md); decompression speed does not depend on the level.
 */
const ZSTD_LEVEL = 1;

/**
 * Dictionaries, and with them Bloom filters, for every column whose row group's distinct values
 * fit: any count up to the group's rows, strings up to 256 KiB of them (4,096 distinct values of
 * ~60 bytes; the ~1 KB properties never fit). A group's Bloom filter lets DuckDB skip it for
 * `distinct_id = ?` and `uuid = ?` without decompressing the column: a person's latest events
 * and a uuid lookup became several times faster, for somewhat larger files and a
 * slower write alone that left the store bench's sustained ingestion (writes alongside
 * everything else) unchanged (see bench/NOTES.md).
 */
const dictionaryOptions = (rowGroupRows: number) => `DICTIONARY_SIZE_LIMIT ${2 * rowGroupRows}, STRING_DICTIONARY_PAGE_SIZE_LIMIT ${256 * 1024}`;

/** COPY options of every events Parquet file (the primary files and the person copies). */
export const PARQUET_WRITE_OPTIONS = (rowGroupRows = ROW_GROUP_ROWS): string =>
  `COMPRESSION zstd, COMPRESSION_LEVEL ${ZSTD_LEVEL}, ROW_GROUP_SIZE ${rowGroupRows}, ${dictionaryOptions(rowGroupRows)}`;

/*
 * `properties` is written as plain text, not with Parquet's JSON logical type: DuckDB reads a
 * JSON-typed column slower (every value is checked as it is read, the row groups a filter
 * leaves out included): counts, key lists, row fetches (see bench/NOTES.md). The rows were
 * valid JSON when loaded (the load casts them, or the intake processor made them: `EncodedRows`),
 * and JSON functions read text as it is.
 */

/**
 * Numbers the files this process writes, so no path is ever reused within it (a retried load
 * keeps its tag): DuckDB's footer cache (`parquet_metadata_cache`) then never meets a path
 * whose file changed.
 */
let fileSeq = 0;

/**
 * Write the rows of `select` (EVENT_COLUMNS plus `_day`, already ordered by team and time) as
 * partitioned Parquet, and move the files into place. `tag` makes the names unique. The files
 * are not registered: the caller does that in its own transaction.
 */
export async function writeParquet(c: DuckDBConnection, root: string, select: string, tag: string, now: () => number): Promise<ParquetFile[]> {
  const tmp = join(root, `${TMP_PREFIX}${tag}`);
  await rm(tmp, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  try {
    await c.run(
      `COPY (${asStored(select)}) TO ${sqlString(tmp)} (FORMAT parquet, ${PARQUET_WRITE_OPTIONS()}, PARTITION_BY (team_id, _day), WRITE_PARTITION_COLUMNS true, FILENAME_PATTERN 'part_{i}')`,
    );
    const written = await listWritten(c, join(tmp, '**', '*.parquet'));
    return await placeFiles(
      root,
      tag,
      now,
      written.map((w) => {
        const m = PARTITION_RE.exec(w.filename);
        if (!m) throw new Error(`unexpected Parquet output ${w.filename}`);
        return { ...w, teamId: Number(m[1]), day: m[2] as string };
      }),
    );
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/**
 * Write the rows of `select` (EVENT_COLUMNS plus `_day`, as the partitioned files have them; all
 * of one team-day, in the order they are to be stored) as one Parquet file, and move it into
 * place: no partitioned write, which buffers its rows per partition first. The file is not
 * registered; null when there are no rows.
 */
export async function writeParquetFile(
  c: DuckDBConnection,
  root: string,
  select: string,
  part: { teamId: number; day: string },
  tag: string,
  now: () => number,
  /** Values bound to the `?` of `select`. */
  params: readonly string[] = [],
): Promise<ParquetFile | null> {
  if (!Number.isSafeInteger(part.teamId) || !/^\d{4}-\d{2}-\d{2}$/.test(part.day)) throw new Error('unexpected partition');
  const tmp = join(root, `${TMP_PREFIX}${tag}-${fileSeq++}.parquet`);
  await mkdir(root, { recursive: true });
  try {
    await c.run(`COPY (${asStored(select)}) TO ${sqlString(tmp)} (FORMAT parquet, ${PARQUET_WRITE_OPTIONS()})`, [...params]);
    const written = await listWritten(c, tmp);
    const [file] = await placeFiles(root, tag, now, written.map((w) => ({ ...w, ...part })));
    return file ?? null;
  } finally {
    await rm(tmp, { force: true });
  }
}

const asStored = (select: string) => `SELECT * REPLACE (CAST(properties AS VARCHAR) AS properties) FROM (${select})`;

interface Written {
  filename: string;
  rows: bigint;
  lo: bigint;
  hi: bigint;
}

/** The files a COPY wrote (a path or a glob) with their rows and time range; none when every row was a duplicate. */
async function listWritten(c: DuckDBConnection, files: string): Promise<Written[]> {
  try {
    return (
      await c.runAndReadAll(
        `SELECT filename, count(*) AS rows, epoch_ms(min(timestamp)) AS lo, epoch_ms(max(timestamp)) AS hi FROM read_parquet(${sqlString(files)}, filename = true, hive_partitioning = false) GROUP BY filename ORDER BY filename`,
      )
    ).getRowObjectsJS() as unknown as Written[];
  } catch (error) {
    if (/No files found/i.test(String(error))) return [];
    throw error;
  }
}

/** Rename written files into their team-day directories under new names, durably (the manifest will name them). */
async function placeFiles(root: string, tag: string, now: () => number, written: ReadonlyArray<Written & { teamId: number; day: string }>): Promise<ParquetFile[]> {
  const out: ParquetFile[] = [];
  const dirs = new Set<string>();
  for (const w of written) {
    const dir = join(root, String(w.teamId), w.day);
    await mkdir(dir, { recursive: true });
    const rel = join(String(w.teamId), w.day, `${tag}-${fileSeq++}.parquet`);
    await rename(w.filename, join(root, rel));
    dirs.add(dir);
    dirs.add(join(root, String(w.teamId)));
    const bytes = (await stat(join(root, rel))).size;
    out.push({ path: rel, teamId: w.teamId, day: w.day, minTs: Number(w.lo), maxTs: Number(w.hi), rows: Number(w.rows), bytes, createdAt: now() });
  }
  // The renames must be durable before the manifest names the files.
  for (const dir of dirs) syncDir(dir);
  if (dirs.size) syncDir(root);
  return out;
}

/** Register files in the manifest (and their property keys, when already known). */
export async function registerFiles(tx: Tx, files: readonly ParquetFile[]): Promise<void> {
  for (const f of files) {
    await tx.run(
      `INSERT INTO event_parquet_files (path, team_id, day, min_ts, max_ts, rows, bytes, created_at, sorted) VALUES (?, ?, CAST(? AS DATE), make_timestamp(?::BIGINT * 1000), make_timestamp(?::BIGINT * 1000), ?, ?, make_timestamp(?::BIGINT * 1000), ?)`,
      [f.path, f.teamId, f.day, f.minTs, f.maxTs, f.rows, f.bytes, f.createdAt, f.sorted !== false],
    );
    if (f.propertyKeys) await tx.run(KEYS_INSERT, [f.path, JSON.stringify(f.propertyKeys), f.path]);
  }
}

const KEYS_INSERT =
  `INSERT OR REPLACE INTO event_file_property_keys SELECT ?, from_json(CAST(? AS JSON), '["VARCHAR"]') WHERE EXISTS (SELECT 1 FROM event_parquet_files WHERE path = ?)`;

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
 * List the property keys of each given file (a `json_keys` pass over their rows, on a reader, so
 * loads are not held up) and record them in the sidecar, each only if its file is still
 * registered. Returns the files with their keys as recorded.
 */
export async function indexPropertyKeys(db: Database, root: string, files: readonly ParquetFile[]): Promise<ParquetFile[]> {
  if (files.length === 0) return [];
  const found = await db.withReader(async (c) =>
    (
      await c.runAndReadAll(
        `SELECT filename AS file, list(DISTINCT k) AS keys FROM (SELECT filename, unnest(json_keys(properties)) AS k FROM read_parquet(${fileList(root, files)}, filename = true)) GROUP BY filename`,
      )
    ).getRowObjectsJS() as Array<{ file: string; keys: string[] }>,
  );
  const byFile = new Map(found.map((r) => [r.file, r.keys]));
  const out = files.map((f) => ({ ...f, propertyKeys: [...(byFile.get(join(root, f.path)) ?? [])].sort() }));
  await db.transaction(async (tx) => {
    for (const f of out) await tx.run(KEYS_INSERT, [f.path, JSON.stringify(f.propertyKeys), f.path]);
  });
  return out;
}
