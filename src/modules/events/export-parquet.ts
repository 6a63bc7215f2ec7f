import { randomBytes } from 'node:crypto';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { compileSelect, type CompiledSelect } from '../../core/query';
import type { PropertyType } from '../../core/ingest/property-type';
import {
  concatParquetParts, orderedScan, writeEmptyEventsParquet, writeParquetPart, writeParquetSelect, type ParquetPart,
} from '../../storage/events/read/export-reads';
import { readKeyAt } from '../../storage/events/read/list-reads';
import type { Order } from '../../storage/events/read/list-statements';
import {
  afterCut, FILE_CHUNK, isSpare, planExport, sliceScans, slicesAsRead, startingPoint, upToCut, type ExportContext, type KeyedSlice, type SliceScans, type Slice,
} from './export-plan';
import { listScope, selectFragment, selectOrder, type Scope } from './list';
import type { ListRequest } from './params';

/**
 * `format=parquet`: DuckDB writes the whole export to a temporary file (zstd; see storage's
 * `parquetSliceCopyStatement` for the columns, a select's own columns and types otherwise)
 * before the response starts, so its errors are ordinary statuses; the file is then sent in
 * chunks (memory stays that of one chunk) and removed once sent, or when the client goes away.
 */
export async function parquetChunks(ctx: ExportContext, req: ListRequest): Promise<AsyncGenerator<Uint8Array>> {
  const file = join(ctx.scratchDir, `events-export-${randomBytes(8).toString('hex')}.parquet`);
  try {
    if (req.select.length) await writeSelectParquet(ctx, req, file);
    else await writeEventsParquet(ctx, req, file);
  } catch (error) {
    await rm(file, { force: true });
    throw error;
  }
  return fileChunks(file);
}

async function writeSelectParquet(ctx: ExportContext, req: ListRequest, file: string): Promise<void> {
  const compiled = compileSelect(req.select, req.where, ctx.now);
  // Nothing matches (e.g. an unknown person, a null scope): no rows, still the select's columns and types.
  const scope = await listScope(ctx, req, selectFragment(compiled));
  const read = { select: compiled, orderBy: selectOrder(compiled, req), range: { from: req.afterMs, to: req.beforeMs }, limit: req.limit ?? Number.MAX_SAFE_INTEGER, offset: req.offset };
  await writeParquetSelect(ctx, scope, read, await definedTypes(ctx, compiled), file);
}

/**
 * An events Parquet export, planned in slices of time as the CSV export is. A Parquet file has one
 * footer, so the slices cannot be sent one by one. Slices over time-ordered files need no sort,
 * and consecutive ones are read as one scan; the others are sorted by DuckDB one at a time. One
 * such part is written straight to the file sent; several are each written to a part file, and
 * one scan of the parts in order writes the file sent. Memory stays at a slice and the writer's
 * row groups however many rows the export has (one COPY sorting everything at once ran out of
 * DUCKDB_MEMORY_LIMIT). Each part is capped by what the parts before it wrote, as the CSV
 * export's slices are.
 */
async function writeEventsParquet(ctx: ExportContext, req: ListRequest, file: string): Promise<void> {
  const base = await listScope(ctx, req);
  const scope = base && req.limit !== 0 ? await startingPoint(ctx, req, base) : null;
  if (!scope) return writeEmptyEventsParquet(ctx, file);
  // Every part decided now (`slicesAsRead`): the file is written whole before the response starts.
  const scans = sliceScans(ctx, scope, req.order);
  const slices = await Array.fromAsync(slicesAsRead(ctx, scope, await planExport(ctx, req, scope, req.limit), req.order, scans));
  if (slices.length === 0) return writeEmptyEventsParquet(ctx, file);
  const parts = await parquetParts(ctx, scope, req.order, await cutByKey(ctx, scope, req.order, slices), scans);
  await writeParts(ctx, scope, req.order, parts, req.limit, file);
}

/**
 * The parts, in order, as `file`, at most `limit` rows: each capped by what the parts before it
 * wrote. One part to read (the rest after a limit's slice, read only when rows went missing,
 * aside) is the file sent.
 */
async function writeParts(ctx: ExportContext, scope: Scope, order: Order, parts: readonly ParquetPart[], limit: number | null, file: string): Promise<void> {
  const alone = parts.filter((p) => !isSpare(p.slice)).length === 1;
  const files: string[] = [];
  const partFile = (i: number) => file.replace(/\.parquet$/, `-part-${i}.parquet`);
  let written = 0;
  try {
    for (const [i, part] of parts.entries()) {
      const cap = limit === null ? null : limit - written;
      if (cap !== null && cap <= 0) break;
      if (alone && i === 0) {
        written += await writeParquetPart(ctx, scope, order, part, file, 'final', cap);
        continue;
      }
      if (alone && i === 1) {
        // Rows went missing meanwhile, so the rest of the window is read too: the file sent becomes the first part.
        await rename(file, partFile(0));
        files.push(partFile(0));
      }
      const to = partFile(files.length);
      files.push(to);
      written += await writeParquetPart(ctx, scope, order, part, to, 'part', cap);
    }
    if (files.length > 0) await concatParquetParts(ctx, files, file);
  } finally {
    await Promise.all(files.map((f) => rm(f, { force: true })));
  }
}

/**
 * The slice a `limit` cuts, as a condition instead of a sort: the rows up to the last one
 * exported, whose key is read first (DuckDB ranks the slice's narrow columns and returns that one
 * row, however many rows the limit leaves in the slice). A newest-first export of time-ordered
 * files then stays one scan, with no part files to join. Rows of equal time come in the files'
 * order, as in the CSV export's scanned slices. A rest after it (read only when rows went
 * missing; planned or not) starts just after that row, the cut slice's rows below it included.
 */
async function cutByKey(ctx: ExportContext, scope: Scope, order: Order, slices: readonly Slice[]): Promise<KeyedSlice[]> {
  const plain = slices.map((slice) => ({ slice, where: scope.where }));
  const at = slices.findIndex((s) => s.limit !== null);
  const cut = slices[at];
  if (!cut?.limit || order !== 'DESC' || scope.person) return plain;
  const last = await readKeyAt(ctx, scope, order, cut, cut.limit);
  if (!last) return plain;
  // The rest is there whether the plan has one after the cut or not (a cut reaching the window's
  // far end has none): its far end is the planned rest's, or the cut slice's own.
  return [...plain.slice(0, at), upToCut(scope, order, cut, last), afterCut(scope, order, cut, last, (slices[at + 1] ?? cut).from)];
}

/** The slices as parts: consecutive slices that scan time-ordered rows joined into one (see storage's `orderedScan`). */
async function parquetParts(ctx: ExportContext, scope: Scope, order: Order, slices: readonly KeyedSlice[], scans: SliceScans): Promise<ParquetPart[]> {
  const parts: ParquetPart[] = [];
  for (const { slice, where } of slices) {
    const last = parts[parts.length - 1];
    if (last?.scan && slice.limit === null && last.where === scope.where) {
      // Newest first, so the slice lies just below the part: joined, they must still be one order.
      // The part's rows all come before the key a limit cuts this slice at, so they meet its condition.
      const joined = { from: slice.from, to: last.slice.to, limit: null };
      const scan = await orderedScan(ctx, scope, order, joined, where);
      if (scan) {
        parts[parts.length - 1] = { slice: joined, where, scan };
        continue;
      }
    }
    // A slice read under the export's own conditions: its scan as `slicesAsRead` may have asked for it.
    parts.push({ slice, where, scan: await (where === scope.where ? scans(slice) : orderedScan(ctx, scope, order, slice, where)) });
  }
  return parts;
}

/**
 * Per selected column, the type the definition of the property it reads gives it (`properties.X`
 * or `person.properties.X` as stored; null for any other expression or an untyped property):
 * what a Parquet reader gets as the column's type.
 */
async function definedTypes(ctx: ExportContext, compiled: CompiledSelect): Promise<Array<PropertyType | null>> {
  const keys = (kind: 'event' | 'person') => [...new Set(compiled.properties.flatMap((p) => (p?.kind === kind ? [p.key] : [])))];
  const [event, person] = await Promise.all([ctx.propertyTypes('event', keys('event')), ctx.propertyTypes('person', keys('person'))]);
  return compiled.properties.map((p) => (p ? ((p.kind === 'event' ? event : person).get(p.key) ?? null) : null));
}

/** A file's bytes in chunks, the file removed afterwards (sent, failed or cancelled). */
async function* fileChunks(file: string): AsyncGenerator<Uint8Array> {
  try {
    const blob = Bun.file(file);
    for (let at = 0; at < blob.size; ) {
      const chunk = new Uint8Array(await blob.slice(at, at + FILE_CHUNK).arrayBuffer());
      if (chunk.length === 0) throw new Error('an export file shrank while it was read');
      at += chunk.length;
      yield chunk;
    }
  } finally {
    await rm(file, { force: true });
  }
}
