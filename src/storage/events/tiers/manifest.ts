/**
 * The manifest (`event_parquet_files`): the Parquet files the events relation reads, each
 * registered in the same transaction as the watermark of the rows it holds; and the property
 * keys of each (`event_file_property_keys`), listed by processing or by the background indexing.
 */
import { join } from 'node:path';
import type { Database, Tx } from '../../db';
import { fileList, NEWEST_FIRST, withTimeBefore, type ParquetFile } from './parquet';

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

/**
 * List the property keys of each given file (a `json_keys` pass over their rows, on a reader, so
 * loads are not held up) and record them in the sidecar, each only if its file is still
 * registered. Returns the files with their keys as recorded.
 */
export async function indexPropertyKeys(db: Database, root: string, files: readonly ParquetFile[]): Promise<ParquetFile[]> {
  if (files.length === 0) return [];
  const found = await db.query<{ file: string; keys: string[] }>(
    `SELECT filename AS file, list(DISTINCT k) AS keys FROM (SELECT filename, unnest(json_keys(properties)) AS k FROM read_parquet(${fileList(root, files)}, filename = true)) GROUP BY filename`,
  );
  const byFile = new Map(found.map((r) => [r.file, r.keys]));
  const out = files.map((f) => ({ ...f, propertyKeys: [...(byFile.get(join(root, f.path)) ?? [])].sort() }));
  await db.transaction(async (tx) => {
    for (const f of out) await tx.run(KEYS_INSERT, [f.path, JSON.stringify(f.propertyKeys), f.path]);
  });
  return out;
}

/**
 * Files registered as not sorted whose rows turn out newest first (`NEWEST_FIRST`), registered
 * as sorted from now on; their paths. The files
 * registered before their order was checked (migration 204) are mostly such files, and an
 * export reads a sorted one without sorting it.
 */
export async function confirmSorted(db: Database, root: string, files: readonly ParquetFile[]): Promise<string[]> {
  if (files.length === 0) return [];
  const rows = await db.query<{ file: string }>(
    `SELECT filename AS file FROM ${withTimeBefore(`read_parquet(${fileList(root, files)}, filename = true, file_row_number = true)`)} GROUP BY filename HAVING ${NEWEST_FIRST}`,
  );
  const inOrder = new Set(rows.map((r) => r.file));
  const sorted = files.filter((f) => inOrder.has(join(root, f.path))).map((f) => f.path);
  await db.transaction(async (tx) => {
    for (const path of sorted) await tx.run('UPDATE event_parquet_files SET sorted = true WHERE path = ?', [path]);
  });
  return sorted;
}
