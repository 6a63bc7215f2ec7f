/** How the events' Parquet files are written: their options, and each file made and moved into place (`parquet.ts`: where they live). */
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { syncDir } from '../log/fs-sync';
import { concatParquet } from './parquet-concat';
import { sqlString } from '../../sql-literal';
import { NEWEST_FIRST, TMP_PREFIX, withTimeBefore, type ParquetFile } from './parquet';

const PARTITION_RE = /team_id=(\d+)[/\\]_day=(\d{4}-\d{2}-\d{2})[/\\][^/\\]+\.parquet$/;

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
 * keeps its tag): nothing that keeps what it read of a path (DuckDB's footer cache, off today:
 * see `openDatabase`) ever meets a path whose file changed.
 */
let fileSeq = 0;

/**
 * Write the rows of `select` (EVENT_COLUMNS plus `_day`, already ordered by team and time) as
 * partitioned Parquet, and move the files into place, each sorted newest first (`sortFile`).
 * `tag` makes the names unique. The files are not registered: the caller does that in its own
 * transaction.
 *
 * `expected`: the one team-day the caller knows the rows to be of (a load whose processing gave
 * them). They are then written as one file, without the partitioned write, which costs a quarter
 * more CPU a row for the same rows and order (see bench/NOTES.md); the file's team and time range
 * are checked, and rows of any other team-day send the write down the partitioned path after all.
 */
export async function writeParquet(
  c: DuckDBConnection,
  root: string,
  select: string,
  tag: string,
  now: () => number,
  expected?: { teamId: number; day: string },
): Promise<ParquetFile[]> {
  if (expected) {
    try {
      const file = await writeParquetFile(c, root, select, expected, tag, now, { checkPartition: true });
      return file ? [file] : [];
    } catch (error) {
      if (!(error instanceof NotOnePartition)) throw error;
    }
  }
  const tmp = join(root, `${TMP_PREFIX}${tag}`);
  await rm(tmp, { recursive: true, force: true });
  await mkdir(root, { recursive: true });
  try {
    await c.run(
      `COPY (${asStored(select)}) TO ${sqlString(tmp)} (FORMAT parquet, ${PARQUET_WRITE_OPTIONS()}, PARTITION_BY (team_id, _day), WRITE_PARTITION_COLUMNS true, FILENAME_PATTERN 'part_{i}')`,
    );
    const placed: Array<Written & { teamId: number; day: string }> = [];
    for (const w of await listWritten(c, join(tmp, '**', '*.parquet'), true)) {
      const m = PARTITION_RE.exec(w.filename);
      if (!m) throw new Error(`unexpected Parquet output ${w.filename}`);
      placed.push({ ...w, filename: w.sorted ? w.filename : await sortFile(c, w.filename), teamId: Number(m[1]), day: m[2] as string });
    }
    return await placeFiles(root, tag, now, placed);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

/** Rows of another team-day than the one a one-file write was told (`writeParquetFile`'s `checkPartition`). */
class NotOnePartition extends Error {}

const DAY_MS = 86_400_000;

const inPartition = (w: Written, part: { teamId: number; day: string }): boolean => {
  const dayStart = Date.parse(`${part.day}T00:00:00Z`);
  return Number(w.teamLo) === part.teamId && Number(w.teamHi) === part.teamId && Number(w.lo) >= dayStart && Number(w.hi) < dayStart + DAY_MS;
};

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
  options: {
    /** Values bound to the `?` of `select`. */
    params?: readonly string[];
    /** The file is to be registered as sorted: checked, and sorted if the plan did not keep the order. */
    newestFirst?: boolean;
    /** Whether the rows are all of `part` is checked from the file: NotOnePartition (nothing placed) when not. Not with `newestFirst`. */
    checkPartition?: boolean;
  } = {},
): Promise<ParquetFile | null> {
  const { params = [], newestFirst = false, checkPartition = false } = options;
  if (!Number.isSafeInteger(part.teamId) || !/^\d{4}-\d{2}-\d{2}$/.test(part.day)) throw new Error('unexpected partition');
  const tmp = join(root, `${TMP_PREFIX}${tag}-${fileSeq++}.parquet`);
  let sortedCopy: string | null = null;
  await mkdir(root, { recursive: true });
  try {
    await c.run(`COPY (${asStored(select)}) TO ${sqlString(tmp)} (FORMAT parquet, ${PARQUET_WRITE_OPTIONS()})`, [...params]);
    const written = await listWritten(c, tmp, newestFirst, checkPartition);
    if (checkPartition && !written.every((w) => inPartition(w, part))) throw new NotOnePartition();
    for (const w of written) if (!w.sorted) sortedCopy = w.filename = await sortFile(c, w.filename);
    const [file] = await placeFiles(root, tag, now, written.map((w) => ({ ...w, ...part })));
    return file ?? null;
  } finally {
    await rm(tmp, { force: true });
    if (sortedCopy) await rm(sortedCopy, { force: true });
  }
}

/**
 * The files (of one team-day, under `root`, in the order given) joined into one by copying their
 * row groups as they are (`concatParquet`), and placed as `writeParquetFile` places its file;
 * null when they cannot be joined so (nothing is placed: the caller writes the rows). The joined
 * file's count and time range, read back by DuckDB (its timestamp column), must be the inputs'.
 */
export async function joinParquetFiles(c: DuckDBConnection, root: string, files: readonly ParquetFile[], tag: string, now: () => number): Promise<ParquetFile | null> {
  const first = files[0];
  if (!first) return null;
  const tmp = join(root, `${TMP_PREFIX}${tag}-${fileSeq++}.parquet`);
  try {
    const joined = await concatParquet(files.map((f) => join(root, f.path)), tmp);
    if (!joined) return null;
    const [read] = await listWritten(c, tmp);
    const rows = files.reduce((n, f) => n + f.rows, 0);
    const lo = Math.min(...files.map((f) => f.minTs));
    const hi = Math.max(...files.map((f) => f.maxTs));
    if (!read || Number(read.rows) !== rows || Number(read.lo) !== lo || Number(read.hi) !== hi) {
      throw new Error(`joined Parquet file ${tmp} does not hold its inputs' ${rows} rows of ${lo}..${hi}`);
    }
    const [file] = await placeFiles(root, tag, now, [{ ...read, teamId: first.teamId, day: first.day }]);
    return file ?? null;
  } finally {
    await rm(tmp, { force: true });
  }
}

/**
 * A sorted copy, newest first, of a written file whose rows came out as several runs; its path
 * (a new one, as every file this process writes gets). DuckDB's partitioned COPY writes each
 * thread's rows as they come (every `partitioned_write_flush_threshold` rows), so with more than
 * one thread a partition's file can hold the query's ORDER BY in runs rather than whole
 * (duckdb/duckdb#14349); a file registered as sorted must be, since the exports' ordered scans
 * read it without a sort. A one-file COPY with an ORDER BY keeps it.
 */
async function sortFile(c: DuckDBConnection, file: string): Promise<string> {
  const sorted = file.replace(/\.parquet$/, '-sorted.parquet');
  await c.run(`COPY (SELECT * FROM read_parquet(${sqlString(file)}, hive_partitioning = false) ORDER BY timestamp DESC) TO ${sqlString(sorted)} (FORMAT parquet, ${PARQUET_WRITE_OPTIONS()})`);
  return sorted;
}

const asStored = (select: string) => `SELECT * REPLACE (CAST(properties AS VARCHAR) AS properties) FROM (${select})`;

interface Written {
  filename: string;
  rows: bigint;
  lo: bigint;
  hi: bigint;
  /** The least and greatest `team_id` of the file's rows (asked with `teams`). */
  teamLo?: bigint;
  teamHi?: bigint;
  /** Whether the rows are newest first (asked with `checkOrder`; otherwise true). */
  sorted: boolean;
}

/**
 * The files a COPY wrote (a path or a glob) with their rows and time range; none when every row
 * was a duplicate. `checkOrder`: whether each file's rows are newest first (`NEWEST_FIRST`);
 * `teams`: the least and greatest project of each (not with `checkOrder`).
 */
async function listWritten(c: DuckDBConnection, files: string, checkOrder = false, teams = false): Promise<Written[]> {
  const read = `read_parquet(${sqlString(files)}, filename = true, hive_partitioning = false${checkOrder ? ', file_row_number = true' : ''})`;
  const source = checkOrder ? withTimeBefore(read) : read;
  const sorted = checkOrder ? NEWEST_FIRST : 'true';
  const teamRange = teams ? ', min(team_id) AS teamLo, max(team_id) AS teamHi' : '';
  try {
    return (
      await c.runAndReadAll(
        `SELECT filename, count(*) AS rows, epoch_ms(min(timestamp)) AS lo, epoch_ms(max(timestamp)) AS hi${teamRange}, ${sorted} AS sorted FROM ${source} GROUP BY filename ORDER BY filename`,
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
