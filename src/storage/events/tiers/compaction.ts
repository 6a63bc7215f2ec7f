import type { Database } from '../../db';
import { EVENT_COLUMNS } from '../../../core/events/columns';
import { fileList, type ParquetFile } from './parquet';
import { registerFiles } from './manifest';
import { joinParquetFiles, writeParquet, writeParquetFile } from './parquet-write';
import { disjointNewestFirst } from '../read/relation';

const columns = EVENT_COLUMNS.join(', ');

/** Files of the same partitions as `parts` whose time range overlaps theirs: where a late retry's original may be. */
export function overlapping(files: readonly ParquetFile[], parts: ReadonlyArray<{ team_id: number; day: string; lo: number; hi: number }>): ParquetFile[] {
  return files.filter((f) => parts.some((p) => p.team_id === f.teamId && p.day === f.day && f.maxTs >= p.lo && f.minTs <= p.hi));
}

/**
 * Move hot rows of segments (fromSeg, toSeg] to Parquet and register them with the new
 * `compacted_segment` in one transaction. A row whose uuid is already in a Parquet file of the
 * same partition and time range is dropped (a late retry that got past the load-time dedupe).
 */
export async function compactHot(db: Database, root: string, fromSeg: number, toSeg: number, manifest: readonly ParquetFile[], now: () => number): Promise<ParquetFile[]> {
  const range = `_seg > ${fromSeg}::BIGINT AND _seg <= ${toSeg}::BIGINT`;
  const parts = await db.query<{ team_id: number; day: string; lo: number; hi: number }>(
    `SELECT team_id, strftime(CAST(timestamp AS DATE), '%Y-%m-%d') AS day, epoch_ms(min(timestamp)) AS lo, epoch_ms(max(timestamp)) AS hi FROM events_hot WHERE ${range} GROUP BY ALL`,
  );
  let files: ParquetFile[] = [];
  if (parts.length > 0) {
    const candidates = overlapping(manifest, parts);
    const antiJoin = candidates.length ? ` AND NOT EXISTS (SELECT 1 FROM read_parquet(${fileList(root, candidates)}) p WHERE p.uuid = h.uuid)` : '';
    files = await db.withReader((c) =>
      writeParquet(c, root, `SELECT ${columns}, CAST(timestamp AS DATE) AS _day FROM events_hot h WHERE ${range}${antiJoin} ORDER BY team_id, timestamp DESC`, `c${toSeg}`, now),
    );
  }
  await db.transaction(async (tx) => {
    await registerFiles(tx, files);
    await tx.run(`UPDATE event_store_state SET compacted_segment = greatest(compacted_segment, ${toSeg}::BIGINT) WHERE id = 1`);
  });
  return files;
}

export interface MergePolicy {
  /** A partition is merged once it has this many files... */
  minFiles: number;
  /** ...each registered at least this long ago (a load's fresh file still serves the dedupe window; a merged file is not merged again at once)... */
  minAgeMs: number;
  /** ...and each smaller than this (big files are left alone); a merge writes at most this many rows. */
  maxFileRows: number;
  /** At most this many files in one merge, the oldest first (absent: all of them). */
  maxFiles?: number;
}

/**
 * Pick one partition to merge: the one with the most small, settled files, of which a merge takes
 * the oldest that together stay within `maxFileRows` (a file that would pass it waits for
 * another merge). Unbounded, merges of files just under the limit wrote files of several million
 * rows, and such a merge held enough of DuckDB's memory to leave the loads beside it out of
 * memory (see bench/NOTES.md).
 */
export function pickMerge(files: readonly ParquetFile[], policy: MergePolicy, now: number): ParquetFile[] | null {
  const groups = new Map<string, ParquetFile[]>();
  for (const f of files) {
    if (f.rows >= policy.maxFileRows || now - f.createdAt < policy.minAgeMs) continue;
    const key = `${f.teamId}/${f.day}`;
    const group = groups.get(key);
    if (group) group.push(f);
    else groups.set(key, [f]);
  }
  let best: ParquetFile[] | null = null;
  let bestCount = 0;
  for (const g of groups.values()) {
    if (g.length < policy.minFiles || g.length <= bestCount) continue;
    const pick = withinRows(g, policy);
    if (pick.length >= 2) {
      best = pick;
      bestCount = g.length;
    }
  }
  return best;
}

/**
 * The oldest of a partition's small files that fit one merge (`maxFiles`, `maxFileRows`), among
 * those that fit beside at least one other: a file too large to pair with any would otherwise,
 * being the oldest, leave every merge at one file and stop merges for good.
 */
function withinRows(group: readonly ParquetFile[], policy: MergePolicy): ParquetFile[] {
  if (group.length < 2) return [];
  const [least, next] = group.map((f) => f.rows).sort((a, b) => a - b);
  const pairs = group.filter((f) => f.rows + (f.rows === least ? next : least) <= policy.maxFileRows);
  const pick: ParquetFile[] = [];
  let rows = 0;
  for (const f of pairs.sort((a, b) => a.createdAt - b.createdAt)) {
    if (pick.length === (policy.maxFiles ?? Infinity)) break;
    if (rows + f.rows > policy.maxFileRows) continue;
    pick.push(f);
    rows += f.rows;
  }
  return pick;
}

/**
 * Merge small files of one team-day (as `pickMerge` picks them) into one file, dropping duplicate
 * uuids (keeping one copy), and swap them in the manifest in one transaction. The old files are
 * returned to be deleted after a grace period (relations built a moment ago may still name them).
 *
 * Without duplicates the files are concatenated, newest file first, without a sort (their row
 * groups copied as they are, `joinParquetFiles`; written by DuckDB if they cannot be): each is
 * sorted newest first already, so the result is sorted when their times do not overlap, and is
 * otherwise a file of sorted runs (`sorted: false`) whose row groups still each span a narrow time
 * range, which every read but the export's ordered scan takes as it is (that scan sorts its
 * slices of such a file). Sorting the rows instead, ~1 KB each, cost several times the CPU of the
 * concatenation and held them in memory, on the cores the loads beside it need (see
 * bench/NOTES.md). With duplicates (rare: a retry that got past the load's dedupe) the rows are
 * sorted as they are de-duplicated, and the file is sorted throughout again.
 */
export async function mergeFiles(db: Database, root: string, files: readonly ParquetFile[], tag: string, now: () => number): Promise<ParquetFile[]> {
  const first = files[0];
  if (!first || files.some((f) => f.teamId !== first.teamId || f.day !== first.day)) throw new Error('a merge takes the files of one team-day');
  const ordered = [...files].sort((a, b) => b.maxTs - a.maxTs || b.minTs - a.minTs);
  const inOrder = ordered.every((f) => f.sorted !== false) && disjointNewestFirst(ordered, Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY);
  const list = fileList(root, ordered);
  const merged = await db.withReader(async (c) => {
    const dups = Number((await c.runAndReadAll(`SELECT count(*) - count(DISTINCT uuid) FROM read_parquet(${list})`)).getRowsJS()[0][0]);
    const source = dups > 0
      ? `(SELECT * FROM read_parquet(${list}, filename = true, file_row_number = true) QUALIFY row_number() OVER (PARTITION BY uuid ORDER BY filename, file_row_number) = 1)`
      : `read_parquet(${list})`;
    // DuckDB keeps insertion order (files in list order, rows in file order) in a plain scan.
    const order = dups === 0 ? '' : ' ORDER BY timestamp DESC';
    const joined = dups === 0 ? await joinParquetFiles(c, root, ordered, tag, now) : null;
    const file = joined ?? (await writeParquetFile(c, root, `SELECT ${columns}, CAST(timestamp AS DATE) AS _day FROM ${source}${order}`, { teamId: first.teamId, day: first.day }, tag, now));
    const written = file && dups === 0 && !inOrder ? { ...file, sorted: false } : file;
    // Without duplicates the merged rows are exactly the inputs' rows: so are their property keys.
    const keys = dups === 0 ? unionKeys(files) : null;
    return written ? [keys ? { ...written, propertyKeys: keys } : written] : [];
  });
  await db.transaction(async (tx) => {
    for (const f of files) {
      await tx.run('DELETE FROM event_file_property_keys WHERE path = ?', [f.path]);
      await tx.run('DELETE FROM event_parquet_files WHERE path = ?', [f.path]);
    }
    await registerFiles(tx, merged);
  });
  return merged;
}

/** The sorted union of the files' property keys, or null when a file's are not known. */
function unionKeys(files: readonly ParquetFile[]): string[] | null {
  const keys = new Set<string>();
  for (const f of files) {
    if (!f.propertyKeys) return null;
    for (const k of f.propertyKeys) keys.add(k);
  }
  return [...keys].sort();
}
