import { assembleEventsQuery, isEmptySql, sql, type SqlFragment } from '../../../core/query';
import type { EventCsvColumn } from '../../../core/events/csv';
import type { PropertyType } from '../../../core/ingest/property-type';
import type { Row } from '../../db';
import {
  bucketCountsStatement, csvSliceCopyStatement, csvSliceScanStatement, emptyParquetEventsStatement, parquetConcatStatement, parquetSelectCopyStatement,
  parquetSliceCopyStatement, sliceRowsStatement, sliceScanRowsStatement,
} from './export-statements';
import { eventsFrom, scopeFrom, type ReadContext, type ReadScope, type SelectRead } from './list-reads';
import { allOf, asEvents, type Order } from './list-statements';

/**
 * The reads and writes of streamed exports, named for what an export asks: row counts by time
 * bucket, a slice's rows, a slice written as CSV or Parquet to a file the caller names. The
 * caller plans the slices; relations, statements and the engine's file lists stay here.
 */

/** A slice of an export's window, [from, to); `limit` as the plan has it (see modules/events/export-plan). */
export interface ExportSlice {
  from: number | null;
  to: number;
  limit: number | null;
}

/** Rows counted per bucket of `widthMs` in the range: the bucket's start (epoch ms) and its rows. */
export async function countByBucket(ctx: ReadContext, scope: ReadScope, range: { from: number | null; to: number }, widthMs: number): Promise<Array<{ bucket: number; n: number }>> {
  const relation = await scopeFrom(ctx, scope, range);
  const rows = await ctx.runner.rows(bucketCountsStatement(relation, ctx.teamId, scope.where, ctx.runner.timeBucket(widthMs), ctx.runner.dialect), 'properties');
  return rows.map((r) => ({ bucket: Number(r.bucket), n: Number(r.n) }));
}

/**
 * The oldest time of the newest whole files below `window.top` that hold at least `rows` rows
 * (counted from the manifest), or null when the files in the window hold fewer: a newest-first
 * read of `rows` rows filtered by time alone finds them all above it.
 */
export async function newestFilesFloor(ctx: ReadContext, window: { bottom: number | null; top: number }, rows: number): Promise<number | null> {
  const relation = await ctx.runner.relation(ctx.teamId, { ...(window.bottom === null ? {} : { from: window.bottom }), to: window.top });
  let seen = 0;
  for (const f of [...relation.files].sort((a, b) => b.minTs - a.minTs)) {
    if (f.maxTs >= window.top - 1) continue;
    if (window.bottom !== null && f.minTs <= window.bottom) break;
    seen += f.rows;
    if (seen >= rows) return f.minTs;
  }
  return null;
}

/** A slice's rows already in newest-first order, readable without a sort: opaque outside storage. */
export interface OrderedScan {
  readonly kind: 'ordered-scan';
}
const scanRelations = new WeakMap<OrderedScan, string>();
const relationOf = (scan: OrderedScan): string => scanRelations.get(scan) as string;

/**
 * The slice's rows as a scan already newest first, when an export slice can be read without a
 * sort: a newest-first export, no LIMIT cutting the slice (that needs the uuid tie-break), no
 * person join (a join gives up the order), storage able to give the rows in that order (its
 * `newestFirstRelation`), and a plan for `where` (the slice's conditions; the scope's unless
 * given) made only of operators that keep order (`planKeepsOrder`). That plan is not asked when
 * the scope's `conditions` (the request's filters without the time bounds) are empty: time
 * bounds and the row keys an export continues from or cuts at are comparisons, which stay
 * filters. Null otherwise: then the engine sorts the slice.
 */
export async function orderedScan(
  ctx: ReadContext, scope: Pick<ReadScope, 'person' | 'where'> & { conditions?: SqlFragment }, order: Order, slice: ExportSlice, where = scope.where,
): Promise<OrderedScan | null> {
  if (order !== 'DESC' || slice.limit !== null || scope.person) return null;
  const scan = await ctx.runner.newestFirst(ctx.teamId, { ...(slice.from === null ? {} : { from: slice.from }), to: slice.to });
  if (!scan) return null;
  const relation = asEvents(scan);
  const timeOnly = scope.conditions !== undefined && isEmptySql(scope.conditions);
  if (!timeOnly && !(await planKeepsOrder(ctx, relation, where))) return null;
  const handle: OrderedScan = Object.freeze({ kind: 'ordered-scan' });
  scanRelations.set(handle, relation);
  return handle;
}

/**
 * Whether DuckDB's plan for the scan of `relation` under `where` is made only of operators that
 * keep a scan's order: the scan, filters, projections. The optimizer makes some filters joins
 * (an IN list of five values or more becomes a hash join, whose rows come out of order with more
 * than one thread: duckdb/duckdb#24398; a person with five distinct ids is enough), and any
 * operator not known to keep the order means the slice is sorted instead.
 */
async function planKeepsOrder(ctx: ReadContext, relation: string, where: SqlFragment): Promise<boolean> {
  const [row] = await ctx.runner.rows(sql`EXPLAIN (FORMAT json) ${sliceScanRowsStatement(relation, ctx.teamId, where)}`);
  const operators: string[] = [];
  const walk = (node: PlanNode) => {
    operators.push(String(node.name));
    for (const child of node.children ?? []) walk(child);
  };
  for (const root of JSON.parse(String(row?.explain_value ?? '[]')) as PlanNode[]) walk(root);
  return operators.length > 0 && operators.every((name) => ORDER_KEEPING_OPERATORS.has(name));
}

/** A node of DuckDB's `EXPLAIN (FORMAT json)`. */
interface PlanNode {
  name?: unknown;
  children?: PlanNode[];
}

const ORDER_KEEPING_OPERATORS = new Set(['READ_PARQUET', 'TABLE_SCAN', 'SEQ_SCAN', 'FILTER', 'PROJECTION', 'EMPTY_RESULT']);

/**
 * A slice's event rows in list order, at most `cap` (null: all). `scan`: the slice's
 * `orderedScan` as the caller asked for it; with no cap, the rows are read from it where storage
 * has one (no sort). Null: sorted.
 */
export async function streamSliceRows(
  ctx: ReadContext, scope: ReadScope, order: Order, slice: ExportSlice, cap: number | null, scanned: Promise<OrderedScan | null> | null,
): Promise<AsyncIterableIterator<Row[]>> {
  const scan = scanned && cap === null ? await scanned : null;
  const statement = scan
    ? sliceScanRowsStatement(relationOf(scan), ctx.teamId, scope.where)
    : sliceRowsStatement(await scopeFrom(ctx, scope, slice), ctx.teamId, scope.where, order, cap, ctx.runner);
  return ctx.runner.stream(statement, 'properties');
}

/** The rows a `COPY … TO` wrote (its one result row). */
function copiedRows(result: ReadonlyArray<Record<string, unknown>>): number {
  const count = Number(result[0]?.Count);
  if (!Number.isSafeInteger(count)) throw new Error('a COPY did not say how many rows it wrote');
  return count;
}

const copy = async (ctx: ReadContext, statement: SqlFragment): Promise<number> => copiedRows(await ctx.runner.rows(statement, 'properties'));

/**
 * One slice of a CSV export written by the engine's CSV writer to `file`, at most `cap` rows:
 * `spliced` when it was read from an ordered scan, without the person columns (the caller
 * splices them into each record). A slice holding more rows than `cap` (stored since it was
 * counted, or above the key it is read up to) is written again, sorted and cut. `scanned`: the
 * slice's `orderedScan` as the caller asked for it (a slice with a `limit` is always sorted;
 * null: sorted).
 */
export async function writeCsvSlice(
  ctx: ReadContext, scope: ReadScope, order: Order, slice: ExportSlice, columns: readonly EventCsvColumn[], cap: number | null, file: string,
  scanned: Promise<OrderedScan | null> | null,
): Promise<{ rows: number; spliced: boolean }> {
  if (slice.limit === null) {
    const scan = scanned ? await scanned : null;
    const rows = scan
      ? await copy(ctx, csvSliceScanStatement(relationOf(scan), ctx.teamId, scope.where, columns, file))
      : await copy(ctx, csvSliceCopyStatement(await scopeFrom(ctx, scope, slice), ctx.teamId, scope.where, columns, order, null, file));
    if (cap === null || rows <= cap) return { rows, spliced: scan !== null };
  }
  const relation = await scopeFrom(ctx, scope, slice);
  return { rows: await copy(ctx, csvSliceCopyStatement(relation, ctx.teamId, scope.where, columns, order, cap, file)), spliced: false };
}

/** A run of an export's slices written as one Parquet part: an ordered scan, or a sorted slice. */
export interface ParquetPart {
  slice: ExportSlice;
  /** The rows' conditions (the export's, or with the key a limit cuts at). */
  where: SqlFragment;
  scan: OrderedScan | null;
}

/**
 * One part as the Parquet file `to`, at most `cap` rows; the rows written. `compression` is the
 * final file's, or a fast codec for a part that `concatParquetParts` reads back once.
 */
export async function writeParquetPart(
  ctx: ReadContext, scope: ReadScope, order: Order, part: ParquetPart, to: string, compression: 'final' | 'part', cap: number | null,
): Promise<number> {
  const write = (relation: string, sort: 'scan' | { order: Order; limit: number | null }) =>
    copy(ctx, parquetSliceCopyStatement(relation, ctx.teamId, part.where, sort, to, compression));
  if (part.slice.limit === null) {
    const rows = await write(part.scan ? relationOf(part.scan) : await scopeFrom(ctx, scope, part.slice), part.scan ? 'scan' : { order, limit: null });
    // More rows than the export has left (stored in the part since it was counted): written again, cut.
    if (cap === null || rows <= cap) return rows;
  }
  return write(await scopeFrom(ctx, scope, part.slice), { order, limit: cap });
}

/** The part files, in their order, as one Parquet file (no sort: the parts are in export order). */
export async function concatParquetParts(ctx: ReadContext, parts: readonly string[], file: string): Promise<void> {
  await ctx.runner.rows(parquetConcatStatement(parts, file), 'properties');
}

/** An events Parquet export with no rows: the same columns and types. */
export async function writeEmptyEventsParquet(ctx: ReadContext, file: string): Promise<void> {
  await ctx.runner.rows(emptyParquetEventsStatement(file));
}

/**
 * A select's Parquet export as `file`: no scope (nothing can match) still writes the select's
 * columns and types. `types` are the columns' defined property types (null: as computed).
 */
export async function writeParquetSelect(
  ctx: ReadContext, scope: Pick<ReadScope, 'where' | 'person'> | null, read: SelectRead, types: ReadonlyArray<PropertyType | null>, file: string,
): Promise<void> {
  const query = assembleEventsQuery({
    relation: await eventsFrom(ctx, scope?.person ?? true, read.range),
    teamId: ctx.teamId,
    filters: scope ? scope.where : sql`false`,
    select: read.select,
    orderBy: read.orderBy,
    limit: read.limit,
    offset: read.offset,
  });
  await ctx.runner.rows(parquetSelectCopyStatement(query, read.select.aliases, read.select.columns, types, file), 'select');
}

/** Adds the property keys of the scope's rows in `relation` to `keys`, stopping once there are more than `max`. */
async function addPropertyKeys(ctx: ReadContext, scope: ReadScope, relation: string, keys: Set<string>, max: number): Promise<void> {
  const rowsWanted = allOf(sql`team_id = ${ctx.runner.dialect.bind(ctx.teamId)}`, scope.where);
  const { statement, keysOf } = ctx.runner.propertyKeys(relation, rowsWanted, max + 1);
  for await (const rows of ctx.runner.stream(statement, 'properties')) {
    for (const row of rows) for (const key of keysOf(row)) keys.add(key);
    // One key past the cap is enough to refuse the export (leaving the loop stops the statement).
    if (keys.size > max) return;
  }
}

/**
 * The property keys of the scope's rows in [lo, hi), more than `max` of them only by one. With
 * `onlyTime` (nothing but the time bounds filters the rows), a file lying wholly inside the
 * window and the listing's `bounds` contributes all its rows, so its keys come from the
 * manifest's per-file list when that is known; only the hot rows, the files a bound cuts
 * through and files not yet listed are read (every row's JSON keys).
 */
export async function windowPropertyKeys(
  ctx: ReadContext, scope: ReadScope, window: { lo: number | null; hi: number }, bounds: { afterMs: number | null; beforeMs: number }, onlyTime: boolean, max: number,
): Promise<Set<string>> {
  const { lo, hi } = window;
  const keys = new Set<string>();
  const scan = (relation: string) => addPropertyKeys(ctx, scope, relation, keys, max);
  if (!onlyTime) {
    await scan(await scopeFrom(ctx, scope, { from: lo, to: hi }));
    return keys;
  }
  const relation = await ctx.runner.relation(ctx.teamId, { ...(lo === null ? {} : { from: lo }), to: hi });
  const rest: string[] = [];
  for (const f of relation.files) {
    // The manifest keeps each file's times truncated to the millisecond, so every row is at or
    // above its `minTs` (a file starting exactly at the inclusive lower bound is inside: the
    // window of a `limit` export starts at a file's `minTs`) and may be up to a millisecond
    // above its `maxTs` (a millisecond to spare below an upper bound).
    const inside = (lo === null || f.minTs >= lo) && f.maxTs < hi - 1 && (bounds.afterMs === null || f.minTs > bounds.afterMs) && f.maxTs < bounds.beforeMs - 1;
    if (inside && f.propertyKeys) for (const k of f.propertyKeys) keys.add(k);
    else rest.push(f.id);
  }
  await scan(asEvents(relation.parts(rest, true)));
  return keys;
}

/**
 * The property keys of the slices' rows, a statement per slice: an engine that does not write
 * files here (ClickHouse) answers each statement once it is finished (see its `stream`), so a
 * slice bounds what it holds for the answer, as it does for the rows.
 */
export async function slicesPropertyKeys(ctx: ReadContext, scope: ReadScope, slices: readonly ExportSlice[], max: number): Promise<Set<string>> {
  const keys = new Set<string>();
  for (const slice of slices) {
    if (keys.size > max) break;
    await addPropertyKeys(ctx, scope, await scopeFrom(ctx, scope, slice), keys, max);
  }
  return keys;
}
