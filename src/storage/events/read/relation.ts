import { translateQueryError } from './query-errors';
import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { join } from 'node:path';
import { EVENT_COLUMNS } from '../../../core/events/columns';
import { AppError } from '../../../errors';
import type { Database, Row, SqlParam } from '../../db';
import type { ParquetFile } from '../tiers/parquet';
import { usableCopies, type PersonCopy } from '../tiers/person-copies';
import { sqlString } from '../../sql-literal';

export interface EventsRelation {
  /** A parenthesized subquery, usable as `FROM <sql> AS events`. */
  sql: string;
  /** Always empty: the relation inlines only validated integers and paths built from ids. */
  params: SqlParam[];
  /**
   * The Parquet files the relation reads, as the manifest knows them. A file never changes once
   * registered (compaction and merges write new files), so its row count, and any count a
   * caller derives from it, stays true for as long as the file is part of a relation.
   */
  files: readonly RelationFile[];
  /**
   * The same rows restricted to the given files (by id) and, with `hot`, the rows not yet in
   * Parquet, with one more column, `_file` (the row's file id, NULL for a hot row): what lets a
   * count be split per file. Ids not in `files` are ignored.
   */
  parts(fileIds: readonly string[], hot: boolean): string;
  /**
   * The relation's Parquet rows (no hot rows) as a subquery whose own row order is newest
   * first, so a statement that keeps DuckDB's insertion order (a scan with WHERE and SELECT, no
   * join or aggregate) reads them in `timestamp DESC` order without sorting: each file is written
   * sorted newest first, and the files are listed newest first. Null when two files' rows overlap
   * in time inside the range, or when a file's rows are runs rather than one order (`sorted:
   * false`): then only a sort gives the order. Hot rows are left out: the
   * store's `newestFirstRelation` uses this only when the range has none.
   */
  newestFirst(): string | null;
}

export interface RelationFile {
  /** Stable for the file's life (its path). */
  id: string;
  rows: number;
  /** Epoch ms of the file's oldest and newest row. */
  minTs: number;
  maxTs: number;
  /** The property keys of the file's rows, when the sidecar knows them (see `indexPropertyKeys`). */
  propertyKeys?: readonly string[];
}

export interface TimeRange {
  /** Inclusive lower bound (epoch ms or Date). */
  from?: number | Date;
  /** Exclusive upper bound (epoch ms or Date). */
  to?: number | Date;
}

const ms = (v: number | Date): number => (v instanceof Date ? v.getTime() : v);

function tsLiteral(v: number | Date): string {
  const n = ms(v);
  if (!Number.isFinite(n)) throw new AppError('invalid_input', 'Invalid time range bound.', 'timestamp');
  return `make_timestamp(${Math.round(n)}::BIGINT * 1000)`;
}

/**
 * One team's events: the hot rows not yet compacted (as of the manifest snapshot passed in)
 * unioned with the team's registered Parquet files, pruned by their min/max time when a range
 * is given. The snapshot (`compactedSegment` + `files`) is taken together, and compacted hot
 * rows are purged only after a grace period, so a relation built a moment before a compaction
 * commits neither loses nor doubles rows.
 */
export function buildEventsRelation(
  teamId: number,
  snapshot: { compactedSegment: number; files: readonly ParquetFile[] },
  parquetRoot: string,
  range: TimeRange = {},
  /** For a person's events: copies to read in place of the files they cover (`sql` only; see person-copies.ts). */
  byPerson?: { copies: readonly PersonCopy[]; root: string },
): EventsRelation {
  if (!Number.isSafeInteger(teamId)) throw new AppError('invalid_input', 'Invalid project id.', 'team_id');
  const conds: string[] = [];
  if (range.from !== undefined) conds.push(`timestamp >= ${tsLiteral(range.from)}`);
  if (range.to !== undefined) conds.push(`timestamp < ${tsLiteral(range.to)}`);
  const extra = conds.length ? ` AND ${conds.join(' AND ')}` : '';
  const lo = range.from === undefined ? -Infinity : ms(range.from);
  const hi = range.to === undefined ? Infinity : ms(range.to);
  // Newest first, as the rows inside each file: a `timestamp DESC` top-N fills its heap from the
  // first row groups it reads, and its dynamic filter then skips the rest by their statistics.
  const files = snapshot.files.filter((f) => f.teamId === teamId && f.maxTs >= lo && f.minTs < hi).sort((a, b) => b.maxTs - a.maxTs);
  const paths = new Map(files.map((f) => [join(parquetRoot, f.path), f]));
  const hot = (extraColumns: string) => `SELECT ${hotColumns}${extraColumns} FROM events_hot WHERE team_id = ${teamId} AND _seg > ${snapshot.compactedSegment}${extra}`;
  // A file holds one team's rows (it is partitioned by team), so the team id is a constant here:
  // the statements' own `team_id = ?` then costs nothing per row instead of a column scan.
  const sealed = (list: readonly string[], extraColumns: string) =>
    `SELECT ${parquetColumns(teamId)}${extraColumns} FROM read_parquet([${list.map(sqlString).join(', ')}])${conds.length ? ` WHERE ${conds.join(' AND ')}` : ''}`;
  const union = (list: readonly string[], withHot: boolean, extraColumns: string) => {
    const branches = withHot ? [hot(extraColumns ? ', NULL::VARCHAR AS _file' : '')] : [];
    if (list.length > 0) branches.push(sealed(list, extraColumns));
    // An empty relation of the right shape when nothing is asked for.
    if (branches.length === 0) branches.push(`${hot(', NULL::VARCHAR AS _file')} AND false`);
    return `(${branches.join(' UNION ALL ')})`;
  };
  return {
    sql: union(byPerson ? personPaths(teamId, snapshot.files, files, byPerson, parquetRoot, lo, hi) : [...paths.keys()], true, ''),
    params: [],
    files: files.map((f) => ({ id: join(parquetRoot, f.path), rows: f.rows, minTs: f.minTs, maxTs: f.maxTs, ...(f.propertyKeys ? { propertyKeys: f.propertyKeys } : {}) })),
    parts: (fileIds, withHot) => union(fileIds.filter((id) => paths.has(id)), withHot, ', filename AS _file'),
    newestFirst: () => {
      if (files.some((f) => f.sorted === false) || !disjointNewestFirst(files, lo, hi)) return null;
      return paths.size > 0 ? `(${sealed([...paths.keys()], '')})` : `(${hot('')} AND false)`;
    },
  };
}

/**
 * The paths a person's list reads: the copies whose sources are all registered (checked against
 * every file of the team, so a day the range only partly covers still uses its copy) and in
 * range, and the files in range they do not cover; newest first, as the files are.
 */
function personPaths(
  teamId: number,
  all: readonly ParquetFile[],
  inRange: readonly ParquetFile[],
  byPerson: { copies: readonly PersonCopy[]; root: string },
  parquetRoot: string,
  lo: number,
  hi: number,
): string[] {
  const copies = usableCopies(all.filter((f) => f.teamId === teamId), byPerson.copies.filter((c) => c.teamId === teamId));
  const covered = new Set(copies.flatMap((c) => c.sources));
  const parts = [
    ...inRange.filter((f) => !covered.has(f.path)).map((f) => ({ path: join(parquetRoot, f.path), maxTs: f.maxTs })),
    ...copies.filter((c) => c.maxTs >= lo && c.minTs < hi).map((c) => ({ path: join(byPerson.root, c.path), maxTs: c.maxTs })),
  ];
  return parts.sort((a, b) => b.maxTs - a.maxTs).map((p) => p.path);
}

/**
 * Whether files sorted by `maxTs` descending hold disjoint times within [lo, hi): each file's
 * newest row in range is no newer than the previous file's oldest (equal times may meet).
 */
export function disjointNewestFirst(files: ReadonlyArray<{ minTs: number; maxTs: number }>, lo: number, hi: number): boolean {
  let floor = Number.POSITIVE_INFINITY;
  for (const f of files) {
    if (Math.min(f.maxTs, hi) > floor) return false;
    floor = Math.max(f.minTs, lo);
  }
  return true;
}

/**
 * `properties` is text in every tier (JSON in the hot table, text in Parquet files written since
 * the JSON logical type was dropped, JSON in older ones): one type, so no tier is cast to JSON
 * (a check of every value) to match another.
 */
const asText = (c: string) => (c === 'properties' ? 'CAST(properties AS VARCHAR) AS properties' : c);
const hotColumns = EVENT_COLUMNS.map(asText).join(', ');
const parquetColumns = (teamId: number) => EVENT_COLUMNS.map((c) => (c === 'team_id' ? `${teamId}::INTEGER AS team_id` : asText(c))).join(', ');

const toValues = (params: readonly SqlParam[]): DuckDBValue[] => params.map((p) => (p instanceof Date ? p.toISOString() : p)) as DuckDBValue[];

function normalize(row: Record<string, unknown>): Row {
  for (const key in row) if (typeof row[key] === 'bigint') row[key] = Number(row[key]);
  return row;
}

export interface StreamOptions {
  /** Aborting interrupts the statement on its connection (a query past its time limit). */
  signal?: AbortSignal;
  /** The request parameter a failure caused by the request is blamed on (its 400 names it). */
  attr?: string | null;
}

/**
 * Stream a query's rows in chunks (DuckDB's streaming result, ~2048 rows a chunk) on a reader
 * connection, holding it until the iterator finishes or is returned early. Memory stays at one
 * chunk whatever the result size: the producer waits for the consumer.
 */
export function streamQuery(db: Database, sql: string, params: readonly SqlParam[] = [], options: StreamOptions = {}): AsyncIterableIterator<Row[]> {
  let pending: Row[] | null = null;
  let finished = false;
  let failure: unknown = null;
  let cancelled = false;
  let wake: (() => void) | null = null;
  let consumed: (() => void) | null = null;
  const release = (which: 'wake' | 'consumed') => {
    const fn = which === 'wake' ? wake : consumed;
    if (which === 'wake') wake = null;
    else consumed = null;
    fn?.();
  };
  const produce = async (c: DuckDBConnection): Promise<void> => {
    const result = await c.stream(sql, toValues(params));
    for await (const chunk of result.yieldRowObjectJs()) {
      if (cancelled) break;
      if (chunk.length === 0) continue;
      pending = chunk.map((r) => normalize(r as Record<string, unknown>));
      release('wake');
      await new Promise<void>((resolve) => (consumed = resolve));
    }
  };
  const producer = db
    .withReader(async (c) => {
      if (options.signal?.aborted) throw options.signal.reason ?? new Error('aborted');
      const interrupt = () => {
        cancelled = true;
        c.interrupt();
        release('consumed');
      };
      options.signal?.addEventListener('abort', interrupt, { once: true });
      try {
        await produce(c);
      } finally {
        options.signal?.removeEventListener('abort', interrupt);
      }
    })
    .catch((error) => (failure = error))
    .finally(() => {
      finished = true;
      release('wake');
    });
  const iterator: AsyncIterableIterator<Row[]> = {
    async next() {
      for (;;) {
        if (pending) {
          const rows = pending;
          pending = null;
          release('consumed');
          return { value: rows, done: false };
        }
        if (finished) {
          if (failure) throw translateQueryError(failure, options.attr ?? null);
          return { value: undefined, done: true };
        }
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
    async return() {
      cancelled = true;
      pending = null;
      release('consumed');
      await producer;
      return { value: undefined, done: true };
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
