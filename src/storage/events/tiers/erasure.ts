import type { DuckDBConnection } from '@duckdb/node-api';
import { join } from 'node:path';
import { EVENT_COLUMNS } from '../../../core/events/columns';
import { wellFormedJson } from '../../../core/ingest/well-formed';
import type { Database } from '../../db';
import { fileList, type ParquetFile } from './parquet';
import { registerFiles } from './manifest';
import { writeParquetFile } from './parquet-write';
import { personCopyRoot, registerCopy, rewritePersonCopy, type PersonCopy } from './person-copies';
import { sqlString } from '../../sql-literal';

/** Whose events an erasure removes: every row with one of these distinct ids or person ids. */
export interface PersonMatch {
  distinctIds: readonly string[];
  personIds: readonly string[];
}

/** What an erasure removed, and what it cost. */
export interface ErasedEvents {
  /** Rows removed: hot rows not yet in Parquet plus the rows the Parquet files lost. */
  rows: number;
  hotRows: number;
  /** Parquet files written again without the rows, and files that held nothing else (unregistered). */
  filesRewritten: number;
  filesDropped: number;
  /** Size of the Parquet files replaced (what was read and written again, less the rows). */
  bytesRewritten: number;
  /** Person-clustered copies written again (or dropped when nothing else was left), and their size. */
  copiesRewritten: number;
  copyBytesRewritten: number;
}

/** The Parquet files and copies an erasure replaced, for the caller's in-memory tiers and the deletion of the old files. */
export interface Erasure {
  erased: ErasedEvents;
  gone: ParquetFile[];
  added: ParquetFile[];
  copiesGone: PersonCopy[];
  copiesAdded: PersonCopy[];
  /** Hot rows deleted that were not compacted yet, by load watermark (`Tiers.expireHot`). */
  hot: Array<{ seg: number; rows: number }>;
}

const marks = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/**
 * The condition a row of the person meets, with its values bound. Never NULL (a row without a
 * person id is someone else's: `NOT (NULL)` would drop it from a rewrite). Each list is one JSON
 * parameter read with `list_contains`, not an IN list: DuckDB's optimizer makes an IN list of
 * five values or more a hash join, which gave up the file's row order (duckdb/duckdb#24398), and
 * a rewritten file keeps its source's place as sorted.
 */
export function personCondition(match: PersonMatch): { sql: string; params: string[] } {
  const parts: string[] = [];
  const params: string[] = [];
  for (const [column, values] of [['distinct_id', match.distinctIds], ['person_id', match.personIds]] as const) {
    if (!values.length) continue;
    parts.push(`coalesce(list_contains(from_json(?::JSON, '["VARCHAR"]'), ${column}), false)`);
    // A lone surrogate would fail DuckDB's JSON: U+FFFD, as the rows' own text was written.
    params.push(wellFormedJson(JSON.stringify(values)));
  }
  return { sql: parts.length ? `(${parts.join(' OR ')})` : 'false', params };
}

/**
 * The files (absolute paths) holding rows of the person, with how many. One branch per column,
 * so each is pushed into the scan and its Bloom filters and statistics skip the row groups
 * without the ids (an OR of both columns would read every row of every file).
 */
async function findRows(c: DuckDBConnection, root: string, files: readonly ParquetFile[], match: PersonMatch): Promise<Map<string, number>> {
  if (files.length === 0) return new Map();
  const list = fileList(root, files);
  const branches: string[] = [];
  const params: string[] = [];
  const byDistinctId = `distinct_id IN (${marks(match.distinctIds.length)})`;
  if (match.distinctIds.length) {
    branches.push(`SELECT filename FROM read_parquet(${list}, filename = true) WHERE ${byDistinctId}`);
    params.push(...match.distinctIds);
  }
  if (match.personIds.length) {
    // Rows the first branch counted are left out here.
    const counted = match.distinctIds.length ? ` AND NOT coalesce(${byDistinctId}, false)` : '';
    branches.push(`SELECT filename FROM read_parquet(${list}, filename = true) WHERE person_id IN (${marks(match.personIds.length)})${counted}`);
    params.push(...match.personIds, ...(counted ? match.distinctIds : []));
  }
  if (branches.length === 0) return new Map();
  const rows = (await c.runAndReadAll(`SELECT filename, count(*) AS n FROM (${branches.join(' UNION ALL ')}) GROUP BY filename`, params)).getRowObjectsJS() as Array<{
    filename: string;
    n: bigint;
  }>;
  return new Map(rows.map((r) => [r.filename, Number(r.n)]));
}

const columns = EVENT_COLUMNS.join(', ');

/**
 * Remove a person's events from the team's hot rows, Parquet files and person-clustered copies.
 * Files are immutable, so each file holding some of the rows is written again without them, as
 * a merge writes its output: a new file in the same order (a plain scan of one file keeps it),
 * registered in place of the old one. Every swap and the hot rows' deletion commit in one
 * transaction, so a reader sees all of the person's rows or none; the old files are the
 * caller's to delete once no relation built before can name them. A crash before the commit
 * leaves only unregistered new files, removed at the next start (and the erasure is run again,
 * see storage/erasure.ts).
 *
 * The rewritten file keeps the old one's `createdAt`, `loadedAt` and `uuidGen`: its rows were
 * registered and loaded then, which is what the merge and copy ages and the load dedupe go by.
 * Its property keys are listed again by the background (the person's rows may have been the only
 * ones with some key).
 */
export async function erasePersonEvents(
  db: Database,
  dataDir: string,
  root: string,
  /**
   * What the erasure works on: the registered files and copies, the compaction watermark, and
   * the last load it covers (`loadedSegment`): hot rows of later loads are events logged after
   * the erasure began, which stay as the Parquet files loaded meanwhile do.
   */
  tiers: { files: readonly ParquetFile[]; copies: readonly PersonCopy[]; compactedSegment: number; loadedSegment: number },
  teamId: number,
  match: PersonMatch,
  tag: string,
  /** The store's clock (the rewritten copies' createdAt). */
  now: () => number,
): Promise<Erasure> {
  const where = personCondition(match);
  const files = tiers.files.filter((f) => f.teamId === teamId);
  const copies = tiers.copies.filter((c) => c.teamId === teamId);
  const written = await db.withReader(async (c) => {
    const inFiles = await findRows(c, root, files, match);
    const gone: ParquetFile[] = [];
    const added: ParquetFile[] = [];
    const renamed = new Map<string, string | null>();
    let parquetRows = 0;
    for (const f of files) {
      const n = inFiles.get(join(root, f.path));
      if (!n) continue;
      parquetRows += n;
      gone.push(f);
      const select = `SELECT ${columns}, CAST(timestamp AS DATE) AS _day FROM read_parquet(${sqlString(join(root, f.path))}) WHERE NOT ${where.sql}`;
      const kept = n < f.rows ? await writeParquetFile(c, root, select, { teamId, day: f.day }, tag, now, { params: where.params, newestFirst: f.sorted !== false }) : null;
      renamed.set(f.path, kept?.path ?? null);
      // Fewer rows in the same order: sorted or runs, as the file was.
      if (kept) added.push({ ...kept, createdAt: f.createdAt, uuidGen: f.uuidGen, loadedAt: f.loadedAt, ...(f.sorted === false ? { sorted: false } : {}) });
    }
    // Copies are searched on their own: a stale copy (its day merged since) may hold rows no
    // registered file has any more, and it stays on disk until the background replaces it.
    const copyRoot = personCopyRoot(dataDir);
    const inCopies = await findRows(c, copyRoot, copies, match);
    const copiesGone: PersonCopy[] = [];
    const copiesAdded: PersonCopy[] = [];
    for (const copy of copies) {
      if (!inCopies.get(join(copyRoot, copy.path))) continue;
      copiesGone.push(copy);
      const sources = copy.sources.flatMap((p) => (renamed.has(p) ? (renamed.get(p) ? [renamed.get(p)!] : []) : [p]));
      const kept = await rewritePersonCopy(c, dataDir, copy, where, sources, now);
      if (kept) copiesAdded.push(kept);
    }
    return { gone, added, copiesGone, copiesAdded, parquetRows };
  });
  const hot: Array<{ seg: number; rows: number }> = [];
  await db.transaction(async (tx) => {
    for (const f of written.gone) {
      await tx.run('DELETE FROM event_file_property_keys WHERE path = ?', [f.path]);
      await tx.run('DELETE FROM event_parquet_files WHERE path = ?', [f.path]);
    }
    await registerFiles(tx, written.added);
    for (const c of written.copiesGone) await tx.run('DELETE FROM event_person_files WHERE path = ?', [c.path]);
    for (const c of written.copiesAdded) await registerCopy(tx, c);
    // Compacted rows waiting for their purge go too (their Parquet copy was just rewritten).
    const inHotRows = `FROM events_hot WHERE team_id = ? AND _seg <= ? AND ${where.sql}`;
    const params = [teamId, tiers.loadedSegment, ...where.params];
    const inHot = await tx.query<{ seg: number; n: number }>(`SELECT _seg AS seg, count(*) AS n ${inHotRows} GROUP BY _seg`, params);
    if (inHot.length) await tx.run(`DELETE ${inHotRows}`, params);
    for (const h of inHot) if (Number(h.seg) > tiers.compactedSegment) hot.push({ seg: Number(h.seg), rows: Number(h.n) });
  });
  const hotRows = hot.reduce((n, h) => n + h.rows, 0);
  const bytes = (xs: ReadonlyArray<{ bytes: number }>) => xs.reduce((n, x) => n + x.bytes, 0);
  return {
    ...written,
    hot,
    erased: {
      rows: hotRows + written.parquetRows,
      hotRows,
      filesRewritten: written.added.length,
      filesDropped: written.gone.length - written.added.length,
      bytesRewritten: bytes(written.gone),
      copiesRewritten: written.copiesGone.length,
      copyBytesRewritten: bytes(written.copiesGone),
    },
  };
}
