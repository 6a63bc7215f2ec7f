import type { Logger } from '../../logger';
import type { Deps } from '../../deps';
import { countByBucket, newestFilesFloor, orderedScan, type OrderedScan } from '../../storage/events/read/export-reads';
import { filtersOnlyTime, findKeys, listWindow, type ListContext, type Scope } from './list';
import type { ListRequest } from './params';
import { afterKey, allOf, upToKey, type EventKey, type Order } from '../../storage/events/read/list-statements';
import type { SqlFragment } from '../../core/query';

/**
 * How an export is cut into slices of time: a row count of what it reads by hour (busy hours by
 * narrower buckets), grouped into slices of about the same number of rows, each written (sorted,
 * or scanned from time-ordered files) on its own, so memory stays at a slice whatever the
 * export's size.
 */

export interface ExportContext extends ListContext {
  logger: Logger;
  /** Rows a slice aims at (see `exportSliceRows`); absent: SLICE_ROWS, the first FIRST_SLICE_ROWS. */
  exportSlices?: Deps['exportSlices'];
  /** Whether the process's memory is tight (see `slicesAsRead`); absent: never. */
  memoryTight?: Deps['memoryTight'];
  /** Where an export writes its temporary files (`Storage.exportsDir`). */
  scratchDir: string;
}

/** Rows a slice aims at: DuckDB sorts one slice at a time, so this bounds an export's memory. */
const SLICE_ROWS = 100_000;
/**
 * The first slice's rows (then doubling up to SLICE_ROWS): the body starts once it is written.
 * Also the size a larger slice is cut to while the process's memory is tight (`memoryTight`,
 * asked as the slice is about to be read: `slicesAsRead`): the sort of a full-size slice of
 * ~1.4 KB events held most of DuckDB's 512 MB beside large batches and took the process past
 * 1 GB; slices this size always would cost a large export on fresh data about a fifth of its
 * pace (bench/NOTES.md).
 */
const FIRST_SLICE_ROWS = 25_000;
/** An export's rows are counted by hour first (see `countBuckets`). */
const HOUR_MS = 3_600_000;
/** Most property columns an events CSV gets; a wider export should `select` its columns. */
export const MAX_CSV_PROPERTY_KEYS = 1_000;
/** Bytes read from an export's file at a time. */
export const FILE_CHUNK = 1 << 20;

/**
 * A slice of an export's window, [from, to): the slices of a plan tile the window, each starting
 * where the one before it ends, so a row is in exactly one slice whatever its time (a row stored
 * late, in an hour the count found empty, included).
 */
export interface Slice {
  /** Null: the window has no lower bound, and this slice is its oldest. */
  from: number | null;
  to: number;
  /** The rows counted in it when it was planned. */
  rows: number;
  /**
   * Null: the slice is read whole. Otherwise it is cut at the rows the export still needs when
   * it is read (under a LIMIT, or up to the key of the last row the export sends: the exports'
   * `cutByKey`); the number is what the plan expected that to be (the rows of the slice where the
   * count reaches the export's limit; 0 for the rest of the window after it, read only when rows
   * went missing meanwhile, and which then also covers the cut slice's rows below a key).
   */
  limit: number | null;
}

/** The slices up to the one a limit cuts: the rest of the window after it is read only when rows went missing. */
export function plannedToRead(slices: readonly Slice[]): Slice[] {
  return slices.filter((s) => !isSpare(s));
}

/** The rest of the window after the slice a limit cuts (see `Slice.limit`). */
export const isSpare = (slice: Pick<Slice, 'limit'>): boolean => slice.limit === 0;

/** A slice and the condition its rows meet (the export's, or with the key a limit cuts at). */
export interface KeyedSlice {
  slice: Slice;
  where: SqlFragment;
}

/**
 * The slice a `limit` cuts, read up to the key of the last row the export sends instead of sorted
 * and cut (both exports' `cutByKey`): a newest-first slice of time-ordered files then stays a scan.
 */
export const upToCut = (scope: Scope, order: Order, cut: Slice, key: EventKey): KeyedSlice => ({
  slice: { ...cut, limit: null },
  where: allOf(scope.where, upToKey(key, order)),
});

/**
 * The rest after a keyed cut, read only when rows went missing: from just after its key (the cut
 * slice's rows below it included) down to `from`, the window's far end.
 */
export const afterCut = (scope: Scope, order: Order, cut: Pick<Slice, 'to'>, key: EventKey, from: number | null): KeyedSlice => ({
  slice: { from, to: cut.to, rows: 0, limit: 0 },
  where: allOf(scope.where, afterKey(key, order)),
});

/** Rows counted in [from, to). */
export interface Bucket {
  from: number;
  to: number;
  n: number;
}

/**
 * Group counted buckets (disjoint, inside the window) into slices of about `target` rows in
 * export order, tiling the window: a slice ends at the far edge of its last bucket, the first
 * starts at the window's near end and the last reaches its far end. The first slices are
 * smaller (`first`, then doubling up to `target`): nothing is sent until the first slice is
 * written, so a small one starts the body sooner. With a `limit`, the bucket where the count
 * reaches it is a slice of its own (only it is cut), and the rest of the window one last slice
 * (see `Slice.limit`).
 */
export function planSlices(buckets: readonly Bucket[], window: { bottom: number | null; top: number }, order: Order, limit: number | null, target = SLICE_ROWS, first = target): Slice[] {
  const desc = order === 'DESC';
  const inside = buckets
    .map((b) => ({ from: Math.max(b.from, window.bottom ?? b.from), to: Math.min(b.to, window.top), n: b.n }))
    .filter((b) => b.n > 0 && b.from < b.to)
    .sort((a, b) => (desc ? b.from - a.from : a.from - b.from));
  if (inside.length === 0) return [];
  // Edges along the export: newest first walks down from the top, oldest first up from the bottom.
  const end = desc ? window.bottom : window.top;
  const slices: Slice[] = [];
  let at: number | null = desc ? window.top : window.bottom;
  let rows = 0;
  let total = 0;
  const close = (edge: number | null, cut: number | null, counted = rows) => {
    slices.push(desc ? { from: edge, to: at as number, rows: counted, limit: cut } : { from: at, to: edge as number, rows: counted, limit: cut });
    at = edge;
    rows = 0;
  };
  for (const b of inside) {
    if (limit !== null && total + b.n >= limit) {
      if (rows > 0) close(desc ? b.to : b.from, null);
      close(desc ? b.from : b.to, limit - total, b.n);
      if (at !== end) close(end, 0, 0);
      return slices;
    }
    rows += b.n;
    total += b.n;
    if (rows >= Math.min(target, first * 2 ** slices.length)) close(desc ? b.from : b.to, null);
  }
  if (rows > 0) close(end, null);
  else if (at !== end) {
    // The last slice reaches the window's far end: rows may be stored there after the count.
    const last = slices[slices.length - 1] as Slice;
    slices[slices.length - 1] = desc ? { ...last, from: end } : { ...last, to: end as number };
  }
  return slices;
}

/** The slices of an export's rows: up to `limit` of them, from the scope's starting point. */
export async function planExport(ctx: ExportContext, req: ListRequest, scope: Scope, limit: number | null): Promise<Slice[]> {
  const window = await exportWindow(ctx, { ...req, limit }, scope);
  const { rows, firstRows } = exportSliceRows(ctx);
  return planSlices(await countBuckets(ctx, scope, window, rows), window, req.order, limit, rows, firstRows);
}

/** Rows a slice aims at, and the first slice's: the context's (tests make them small), else the defaults. */
export function exportSliceRows(ctx: Pick<ExportContext, 'exportSlices'>): { rows: number; firstRows: number } {
  const rows = ctx.exportSlices?.rows ?? SLICE_ROWS;
  return { rows, firstRows: ctx.exportSlices?.firstRows ?? Math.min(rows, FIRST_SLICE_ROWS) };
}

/**
 * A slice is cut into slices of the first one's size when it holds more than this many times
 * that: a slice just over it is not worth a count and a second statement.
 */
const CUT_PAST = 1.5;

/**
 * The planned slices as they are read, each decided when the reader asks for it: where this
 * process sorts them (a runner that writes files; ClickHouse sorts on its server), a slice of
 * more than CUT_PAST times the first slice's rows is cut into slices of that size (its rows
 * counted again, as the plan counts them) if memory is tight then (`memoryTight`) and the reader
 * would sort it (not one it reads from an ordered scan, `scanOf`, which sorts nothing; without
 * `scanOf` it sorts them all), for a smaller sort. An export planned while memory was plentiful
 * thus sorts small slices once it is tight, and one that was tight at its start sorts full-size
 * slices again once it is not. A slice a LIMIT cuts, and the rest of the window after it, are
 * read as planned.
 */
export async function* slicesAsRead(
  ctx: ExportContext, scope: Scope, slices: readonly Slice[], order: Order, scanOf?: SliceScans,
): AsyncGenerator<Slice> {
  const { firstRows } = exportSliceRows(ctx);
  const sorts = async (slice: Slice) => !scanOf || (await scanOf(slice)) === null;
  for (const slice of slices) {
    if (slice.limit !== null || slice.rows <= CUT_PAST * firstRows || !ctx.runner.writesFiles || !ctx.memoryTight?.() || !(await sorts(slice))) {
      yield slice;
      continue;
    }
    const window = { bottom: slice.from, top: slice.to };
    const cut = planSlices(await countBuckets(ctx, scope, window, firstRows), window, order, null, firstRows);
    // None counted now (erased meanwhile): the slice is read as planned, for rows stored since.
    if (cut.length === 0) yield slice;
    else yield* cut;
  }
}

/** A slice's ordered scan (storage's `orderedScan`), asked of storage once an export (`sliceScans`). */
export type SliceScans = (slice: Slice) => Promise<OrderedScan | null>;

/**
 * The export's slices' ordered scans, each asked of storage once: `slicesAsRead` asks whether a
 * large slice would be sorted before it cuts it while memory is tight, and the reader then reads
 * the slice from the same answer instead of asking again (a `newestFirst` and an `EXPLAIN`).
 */
export function sliceScans(ctx: ExportContext, scope: Scope, order: Order): SliceScans {
  const asked = new WeakMap<Slice, Promise<OrderedScan | null>>();
  return (slice) => {
    let scan = asked.get(slice);
    if (!scan) asked.set(slice, (scan = orderedScan(ctx, scope, order, slice)));
    return scan;
  };
}

/**
 * The export's rows counted by hour, and every run of hours holding more than `target` rows
 * counted again in narrower buckets (the hour halved until its buckets should fit, down to
 * MIN_BUCKET_MS, and again where the rows are not spread evenly): a busy hour becomes several
 * slices, so a slice stays about `target` rows however the rows bunch up in time.
 */
async function countBuckets(ctx: ExportContext, scope: Scope, window: { bottom: number | null; top: number }, target: number): Promise<Bucket[]> {
  const count = async (from: number | null, to: number, width: number): Promise<Bucket[]> => {
    const rows = await countByBucket(ctx, scope, { from, to }, width);
    return rows.map((r) => ({ from: Math.max(r.bucket, from ?? Number.NEGATIVE_INFINITY), to: Math.min(r.bucket + width, to), n: r.n }));
  };
  let buckets = await count(window.bottom, window.top, HOUR_MS);
  for (;;) {
    const runs = busyRuns(buckets, target);
    if (runs.length === 0) return buckets;
    const inRun = (b: Bucket) => runs.some((r) => b.from >= r.from && b.to <= r.to);
    const recounted: Bucket[] = [];
    for (const run of runs) recounted.push(...(await count(run.from, run.to, narrowerWidth(run, target))));
    buckets = [...buckets.filter((b) => !inRun(b)), ...recounted];
  }
}

/** Storage keeps millisecond times: a bucket of one millisecond cannot be split further. */
const MIN_BUCKET_MS = 1;

interface BusyRun {
  from: number;
  to: number;
  maxRows: number;
  minWidth: number;
}

/** Adjacent buckets of more than `target` rows that can still be split, as runs recounted together. */
function busyRuns(buckets: readonly Bucket[], target: number): BusyRun[] {
  const runs: BusyRun[] = [];
  for (const b of [...buckets].sort((x, y) => x.from - y.from)) {
    if (b.n <= target || b.to - b.from <= MIN_BUCKET_MS) continue;
    const last = runs[runs.length - 1];
    if (last && last.to === b.from) runs[runs.length - 1] = { from: last.from, to: b.to, maxRows: Math.max(last.maxRows, b.n), minWidth: Math.min(last.minWidth, b.to - b.from) };
    else runs.push({ from: b.from, to: b.to, maxRows: b.n, minWidth: b.to - b.from });
  }
  return runs;
}

/**
 * The run's narrowest bucket halved until its busiest bucket, spread evenly, would fill half a
 * slice: every bucket recounted is split (at least in four), so the recounting ends.
 */
function narrowerWidth(run: BusyRun, target: number): number {
  const halvings = Math.ceil(Math.log2((2 * run.maxRows) / target));
  return Math.max(MIN_BUCKET_MS, Math.floor(run.minWidth / 2 ** halvings));
}

/**
 * The window an export reads: the listing's, with its lower bound raised, for a newest-first
 * export of `limit` rows filtered by nothing but time, to the oldest of the newest whole files
 * (counted from the manifest) that hold that many rows: the rows it exports all lie above. The
 * hourly count that plans the slices then reads days instead of the whole history.
 */
async function exportWindow(ctx: ExportContext, req: ListRequest, scope: Scope): Promise<{ bottom: number | null; top: number }> {
  const window = listWindow(req);
  if (req.order !== 'DESC' || req.limit === null || req.cursor || req.offset > 0 || !filtersOnlyTime(scope)) return window;
  const floor = await newestFilesFloor(ctx, window, req.limit);
  return floor === null ? window : { bottom: floor, top: window.top };
}

/** `offset` (and `cursor`) of an export: continue after the offset-th row of the listing. */
export async function startingPoint(ctx: ExportContext, req: ListRequest, scope: Scope): Promise<Scope | null> {
  const cursor = req.cursor ? afterKey(req.cursor, req.order, ctx.runner) : null;
  const where = allOf(scope.where, cursor);
  if (req.offset === 0) return { ...scope, where };
  const keys = await findKeys(ctx, { ...scope, where }, req.order, listWindow(req), req.offset);
  const last = keys[req.offset - 1];
  return last ? { ...scope, where: allOf(where, afterKey(last, req.order, ctx.runner)) } : null;
}

