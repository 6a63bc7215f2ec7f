import type { Logger } from '../../logger';
import { HOUR_MS, hourlyCountsStatement } from './export-queries';
import { findKeys, listWindow, relationFor, type ListContext, type Scope } from './list';
import type { ListRequest } from './params';
import { afterKey, allOf, asEvents, type Order } from './queries';

/**
 * How an export is cut into slices of time: an hourly row count of what it reads, grouped into
 * slices of about the same number of rows, each written (sorted, or scanned from time-ordered
 * files) on its own, so memory stays at a slice whatever the export's size.
 */

export interface ExportContext extends ListContext {
  logger: Logger;
}

/** Rows a slice aims at: DuckDB sorts one slice at a time, so this bounds an export's memory. */
const SLICE_ROWS = 100_000;
/** The first slice's rows (then doubling up to SLICE_ROWS): the body starts once it is written. */
const FIRST_SLICE_ROWS = 25_000;
/** Bytes read from an export's file at a time. */
export const FILE_CHUNK = 1 << 20;

export interface Slice {
  from: number;
  to: number;
  limit: number | null;
}

/**
 * Group hourly buckets (in export order) into slices of about `target` rows, up to `limit` rows.
 * The first slices are smaller (`first`, then doubling up to `target`): nothing is sent until the
 * first slice is written, so a small one starts the body sooner. The hour where `limit` is reached
 * ends the plan as a slice of its own, with the rows still needed.
 */
export function planSlices(
  buckets: Array<{ bucket: number; n: number }>,
  window: { bottom: number | null; top: number },
  order: Order,
  limit: number | null,
  target = SLICE_ROWS,
  first = target,
): Slice[] {
  const sorted = [...buckets].sort((a, b) => (order === 'DESC' ? b.bucket - a.bucket : a.bucket - b.bucket));
  const slices: Slice[] = [];
  let current: { lo: number; hi: number; rows: number } | null = null;
  let total = 0;
  const close = (final: boolean) => {
    if (!current) return;
    slices.push({ from: Math.max(current.lo, window.bottom ?? current.lo), to: Math.min(current.hi, window.top), limit: final && limit !== null ? current.rows - (total - limit) : null });
    current = null;
  };
  for (const b of sorted) {
    const lo = b.bucket;
    const hi = b.bucket + HOUR_MS;
    if (limit !== null && total + b.n >= limit) {
      // The hour the limit cuts is a slice of its own: only it needs the sort a cut needs.
      close(false);
      current = { lo, hi, rows: b.n };
      total += b.n;
      close(true);
      return slices;
    }
    current = current ? { lo: Math.min(current.lo, lo), hi: Math.max(current.hi, hi), rows: current.rows + b.n } : { lo, hi, rows: b.n };
    total += b.n;
    if (current.rows >= Math.min(target, first * 2 ** slices.length)) close(false);
  }
  close(false);
  return slices;
}

/** The slices of an export's rows: up to `limit` of them, from the scope's starting point. */
export async function planExport(ctx: ExportContext, req: ListRequest, scope: Scope, limit: number | null): Promise<Slice[]> {
  const window = await exportWindow(ctx, { ...req, limit }, scope);
  const counts = await ctx.runner.rows(hourlyCountsStatement(await relationFor(ctx, scope.person, window.bottom, window.top), ctx.teamId, scope.where), 'properties');
  return planSlices(counts.map((r) => ({ bucket: Number(r.bucket), n: Number(r.n) })), window, req.order, limit, SLICE_ROWS, FIRST_SLICE_ROWS);
}

/**
 * The window an export reads: the listing's, with its lower bound raised, for a newest-first
 * export of `limit` rows filtered by nothing but time, to the oldest of the newest whole files
 * (counted from the manifest) that hold that many rows: the rows it exports all lie above. The
 * hourly count that plans the slices then reads days instead of the whole history.
 */
async function exportWindow(ctx: ExportContext, req: ListRequest, scope: Scope): Promise<{ bottom: number | null; top: number }> {
  const window = listWindow(req);
  if (req.order !== 'DESC' || req.limit === null || req.cursor || req.offset > 0 || scope.person || scope.conditions.sql.trim() !== '') return window;
  const relation = await ctx.runner.relation(ctx.teamId, { ...(window.bottom === null ? {} : { from: window.bottom }), to: window.top });
  let rows = 0;
  for (const f of [...relation.files].sort((a, b) => b.minTs - a.minTs)) {
    if (f.maxTs >= window.top - 1) continue;
    if (window.bottom !== null && f.minTs <= window.bottom) break;
    rows += f.rows;
    if (rows >= req.limit) return { bottom: f.minTs, top: window.top };
  }
  return window;
}

/** `offset` (and `cursor`) of an export: continue after the offset-th row of the listing. */
export async function startingPoint(ctx: ExportContext, req: ListRequest, scope: Scope): Promise<Scope | null> {
  const cursor = req.cursor ? afterKey(req.cursor, req.order) : null;
  const where = allOf(scope.where, cursor);
  if (req.offset === 0) return { ...scope, where };
  const keys = await findKeys(ctx, { ...scope, where }, req.order, listWindow(req), req.offset);
  const last = keys[req.offset - 1];
  return last ? { ...scope, where: allOf(where, afterKey(last, req.order)) } : null;
}

/**
 * The slice's rows as a relation already newest first, when an export slice can be read without
 * a sort: a newest-first export, no LIMIT cutting the slice (that needs the uuid tie-break), no
 * person join (a join gives up the order), and storage able to give the rows in that order (its
 * `newestFirstRelation`). Null otherwise: then DuckDB sorts the slice.
 */
export async function newestFirstRelation(ctx: ExportContext, scope: Scope, order: Order, slice: Slice): Promise<string | null> {
  if (order !== 'DESC' || slice.limit !== null || scope.person) return null;
  const scan = await ctx.runner.newestFirst(ctx.teamId, { from: slice.from, to: slice.to });
  return scan ? asEvents(scan) : null;
}
