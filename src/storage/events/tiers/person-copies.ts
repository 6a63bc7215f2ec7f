import { mkdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { EVENT_COLUMNS } from '../../../core/events/columns';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Database, Tx } from '../../db';
import { syncDir } from '../log/fs-sync';
import { fileList, removeUnknownFiles, type ParquetFile } from './parquet';
import { fileOfRow, MANIFEST_COLUMNS, type ManifestRow } from './manifest';
import { PARQUET_WRITE_OPTIONS } from './parquet-write';
import { sqlString } from '../../sql-literal';

/**
 * Person-clustered copies of settled days. The primary files are sorted by time, which is what
 * most reads want (the latest events, a time range, an event), but scatters a person's events
 * over every row group of their days: a person's latest 100 events lie in ~100 row groups, and
 * DuckDB decompresses each group's whole `properties` chunk (`ROW_GROUP_ROWS` events' worth) to
 * read one row of it.
 * A copy holds exactly the rows of a team-day's files (its `sources`), sorted by
 * `(distinct_id, timestamp DESC)` in small row groups, so a person's rows of the day sit in one
 * or two groups that the `distinct_id` statistics and Bloom filter pick out. Person lists read a
 * copy in place of its sources while every source is still registered; after a merge or a late
 * file the copy is stale or partial, the relation reads the primary files it does not cover,
 * and the background writes a new copy once the day has settled again.
 *
 * The cost is a second copy of settled days (about the primary files' size) and one sort and
 * write per team-day, in the background; in exchange, a person's latest keys and the fetch of
 * their rows read a few row groups instead of one per event (see bench/NOTES.md).
 */
export interface PersonCopy extends ParquetFile {
  /** The primary files (paths relative to the Parquet root) whose rows the copy holds, exactly. */
  sources: readonly string[];
}

export const personCopyRoot = (dataDir: string): string => join(dataDir, 'events', 'by-person');

/** Smaller groups than the primary files': only person lists read copies, one or two groups a day. */
const COPY_ROW_GROUP_ROWS = 2048;
const TMP_PREFIX = '.tmp-';

export interface PersonCopyPolicy {
  enabled: boolean;
  /** A team-day is copied once it ended at least this long ago and its newest file is this old. */
  minAgeMs: number;
}

export async function loadPersonCopies(db: Database): Promise<PersonCopy[]> {
  const rows = await db.query<ManifestRow & { sources: string[] }>(`SELECT path, ${MANIFEST_COLUMNS}, sources FROM event_person_files ORDER BY team_id, day`);
  return rows.map((r) => ({ ...fileOfRow(r), sources: [...r.sources] }));
}

/** Remove copies the manifest does not know (a crash between write and registration) and temporary files. */
export async function removeOrphanCopies(dataDir: string, copies: readonly PersonCopy[]): Promise<number> {
  const root = personCopyRoot(dataDir);
  await mkdir(root, { recursive: true });
  return removeUnknownFiles(root, new Set(copies.map((c) => c.path)));
}

const DAY_MS = 86_400_000;
const dayEnd = (day: string): number => Date.parse(`${day}T00:00:00Z`) + DAY_MS;

/** A team-day due for a (new) copy: its files now, and the copy they replace, if any. */
export interface CopyJob {
  teamId: number;
  day: string;
  files: ParquetFile[];
  replaces: PersonCopy | null;
}

/**
 * The team-days whose copy is missing or no longer holds exactly their files, among those
 * settled (ended and unchanged for `minAgeMs`), newest day first.
 */
export function dueCopies(files: readonly ParquetFile[], copies: readonly PersonCopy[], policy: PersonCopyPolicy, now: number): CopyJob[] {
  if (!policy.enabled) return [];
  const groups = new Map<string, ParquetFile[]>();
  for (const f of files) {
    const key = `${f.teamId}/${f.day}`;
    const g = groups.get(key);
    if (g) g.push(f);
    else groups.set(key, [f]);
  }
  const byDay = new Map(copies.map((c) => [`${c.teamId}/${c.day}`, c]));
  const out: CopyJob[] = [];
  for (const [key, g] of groups) {
    const first = g[0]!;
    if (dayEnd(first.day) > now - policy.minAgeMs) continue;
    if (g.some((f) => f.createdAt > now - policy.minAgeMs)) continue;
    const copy = byDay.get(key) ?? null;
    if (copy && sameSet(copy.sources, g.map((f) => f.path))) continue;
    out.push({ teamId: first.teamId, day: first.day, files: g, replaces: copy });
  }
  return out.sort((a, b) => (a.day < b.day ? 1 : a.day > b.day ? -1 : a.teamId - b.teamId));
}

const sameSet = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && b.every((x) => a.includes(x));

/**
 * The copies a relation over `files` may read in place of their sources: those whose every
 * source is among `files` (a copy of files merged away since is stale and skipped).
 */
export function usableCopies(files: ReadonlyArray<{ path: string }>, copies: readonly PersonCopy[]): PersonCopy[] {
  if (copies.length === 0) return [];
  const present = new Set(files.map((f) => f.path));
  return copies.filter((c) => c.sources.length > 0 && c.sources.every((p) => present.has(p)));
}

let copySeq = 0;

/**
 * Write the rows of `select` (a copy's columns, in the order they are to be stored) as a copy
 * file of a team-day and move it into place. Not registered; null when there are no rows.
 */
async function writeCopyFile(
  c: DuckDBConnection,
  dataDir: string,
  part: { teamId: number; day: string },
  select: string,
  now: () => number,
  params: readonly string[] = [],
): Promise<Omit<PersonCopy, 'sources'> | null> {
  if (!Number.isSafeInteger(part.teamId) || !/^\d{4}-\d{2}-\d{2}$/.test(part.day)) throw new Error('unexpected partition');
  const root = personCopyRoot(dataDir);
  const dir = join(root, String(part.teamId), part.day);
  const rel = join(String(part.teamId), part.day, `p${Date.now()}-${copySeq++}.parquet`);
  const tmp = join(root, `${TMP_PREFIX}${rel.replaceAll('/', '_')}`);
  await mkdir(dir, { recursive: true });
  try {
    await c.run(`COPY (${select}) TO ${sqlString(tmp)} (FORMAT parquet, ${PARQUET_WRITE_OPTIONS(COPY_ROW_GROUP_ROWS)})`, [...params]);
    const [row] = (await c.runAndReadAll(`SELECT count(*) AS n, epoch_ms(min(timestamp)) AS lo, epoch_ms(max(timestamp)) AS hi FROM read_parquet(${sqlString(tmp)})`)).getRowObjectsJS() as Array<{ n: bigint; lo: bigint | null; hi: bigint | null }>;
    if (!row || Number(row.n) === 0) return null;
    await rename(tmp, join(root, rel));
    syncDir(dir);
    return {
      path: rel,
      teamId: part.teamId,
      day: part.day,
      minTs: Number(row.lo),
      maxTs: Number(row.hi),
      rows: Number(row.n),
      bytes: (await stat(join(root, rel))).size,
      createdAt: now(),
    };
  } finally {
    await rm(tmp, { force: true });
  }
}

/** Register a copy in place of its team-day's previous one (inside the caller's transaction). */
export async function registerCopy(tx: Tx, copy: PersonCopy): Promise<void> {
  await tx.run('DELETE FROM event_person_files WHERE team_id = ? AND day = CAST(? AS DATE)', [copy.teamId, copy.day]);
  await tx.run(
    `INSERT INTO event_person_files VALUES (?, ?, CAST(? AS DATE), make_timestamp(?::BIGINT * 1000), make_timestamp(?::BIGINT * 1000), ?, ?, make_timestamp(?::BIGINT * 1000), from_json(CAST(? AS JSON), '["VARCHAR"]'))`,
    [copy.path, copy.teamId, copy.day, copy.minTs, copy.maxTs, copy.rows, copy.bytes, copy.createdAt, JSON.stringify(copy.sources)],
  );
}

/**
 * Write the copy of a team-day's files and register it, replacing the day's previous copy, in
 * one transaction. Returns the new copy (the caller retires the old one's file after the grace
 * period, as relations built a moment ago may name it).
 */
export async function writePersonCopy(db: Database, parquetRoot: string, dataDir: string, job: CopyJob, now: () => number): Promise<PersonCopy> {
  const columns = EVENT_COLUMNS.map((c) => (c === 'properties' ? 'CAST(properties AS VARCHAR) AS properties' : c)).join(', ');
  const written = await db.withReader((c) =>
    writeCopyFile(c, dataDir, job, `SELECT ${columns}, _day FROM read_parquet(${fileList(parquetRoot, job.files)}) ORDER BY distinct_id, timestamp DESC`, now),
  );
  if (!written) throw new Error(`no rows to copy for ${job.teamId}/${job.day}`);
  const copy: PersonCopy = { ...written, sources: job.files.map((f) => f.path) };
  try {
    await db.transaction((tx) => registerCopy(tx, copy));
  } catch (error) {
    await rm(join(personCopyRoot(dataDir), copy.path), { force: true });
    throw error;
  }
  return copy;
}

/**
 * A copy without the rows `where` matches (bound `params`), in the same order, as a new file
 * with the given sources: not registered; null when no row is left (erasure.ts).
 */
export async function rewritePersonCopy(
  c: DuckDBConnection,
  dataDir: string,
  copy: PersonCopy,
  where: { sql: string; params: readonly string[] },
  sources: readonly string[],
  now: () => number,
): Promise<PersonCopy | null> {
  // A plain scan of one file keeps its row order: the copy stays sorted by person and time.
  const written = await writeCopyFile(c, dataDir, copy, `SELECT * FROM read_parquet(${sqlString(join(personCopyRoot(dataDir), copy.path))}) WHERE NOT (${where.sql})`, now, where.params);
  return written ? { ...written, sources: [...sources] } : null;
}

/** Unregister the copies of a team (their files are the caller's to delete). */
export async function deleteTeamCopies(db: Database, dataDir: string, teamId: number): Promise<void> {
  await db.run('DELETE FROM event_person_files WHERE team_id = ?', [teamId]);
  await rm(join(personCopyRoot(dataDir), String(teamId)), { recursive: true, force: true });
}
