import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assembleEventsQuery, compileSelect, sql, type CompiledSelect } from '../../core/query';
import type { PropertyType } from '../../core/ingest/property-type';
import { emptyParquetEventsStatement, parquetConcatStatement, parquetSelectCopyStatement, parquetSliceCopyStatement } from './export-queries';
import { FILE_CHUNK, newestFirstRelation, planExport, startingPoint, type ExportContext, type Slice } from './export-plan';
import { listScope, relationFor, selectFragment, selectOrder, type Scope } from './list';
import type { ListRequest } from './params';
import { allOf, keyAtStatement, upToKey, type Order } from './queries';

/**
 * `format=parquet`: DuckDB writes the whole export to a temporary file (zstd; see
 * `parquetSliceCopyStatement` for the columns, a select's own columns and types otherwise)
 * before the response starts, so its errors are ordinary statuses; the file is then sent in
 * chunks (memory stays that of one chunk) and removed once sent, or when the client goes away.
 */
export async function parquetChunks(ctx: ExportContext, req: ListRequest): Promise<AsyncGenerator<Uint8Array>> {
  const file = join(tmpdir(), `events-export-${randomBytes(8).toString('hex')}.parquet`);
  try {
    if (req.select.length) await ctx.runner.rows(await parquetSelectStatement(ctx, req, file), 'select');
    else await writeEventsParquet(ctx, req, file);
  } catch (error) {
    await rm(file, { force: true });
    throw error;
  }
  return fileChunks(file);
}

async function parquetSelectStatement(ctx: ExportContext, req: ListRequest, file: string) {
  const compiled = compileSelect(req.select, req.where, ctx.now);
  const scope = await listScope(ctx, req, selectFragment(compiled));
  const query = assembleEventsQuery({
    // Nothing matches (e.g. an unknown person): no rows, still the select's columns and types.
    relation: await relationFor(ctx, scope?.person ?? true, req.afterMs, req.beforeMs),
    teamId: ctx.teamId,
    filters: scope ? scope.where : sql`false`,
    select: compiled,
    orderBy: selectOrder(compiled, req),
    limit: req.limit ?? Number.MAX_SAFE_INTEGER,
    offset: req.offset,
  });
  return parquetSelectCopyStatement(query, compiled.aliases, compiled.columns, await definedTypes(ctx, compiled), file);
}

/**
 * An events Parquet export, planned in slices of time as the CSV export is. A Parquet file has one
 * footer, so the slices cannot be sent one by one. Slices over time-ordered files need no sort,
 * and consecutive ones are read as one scan; the others are sorted by DuckDB one at a time. One
 * such part is written straight to the file sent; several are each written to a part file, and
 * one scan of the parts in order writes the file sent. Memory stays at a slice and the writer's
 * row groups however many rows the export has (one COPY sorting everything at once ran out of
 * DUCKDB_MEMORY_LIMIT).
 */
async function writeEventsParquet(ctx: ExportContext, req: ListRequest, file: string): Promise<void> {
  const base = await listScope(ctx, req);
  const scope = base && req.limit !== 0 ? await startingPoint(ctx, req, base) : null;
  const slices = scope ? await planExport(ctx, req, scope, req.limit) : [];
  if (!scope || slices.length === 0) {
    await ctx.runner.rows(emptyParquetEventsStatement(file));
    return;
  }
  const cut = await cutByKey(ctx, scope, req.order, slices);
  const parts = await parquetParts(ctx, cut.scope, req.order, cut.slices);
  const write = async (part: ParquetPart, to: string, compression: 'final' | 'part') => {
    const relation = part.scan ?? (await relationFor(ctx, scope.person, part.slice.from, part.slice.to));
    const sort = part.scan ? 'scan' : { order: req.order, limit: part.slice.limit };
    await ctx.runner.rows(parquetSliceCopyStatement(relation, ctx.teamId, cut.scope.where, sort, to, compression), 'properties');
  };
  if (parts.length === 1) return write(parts[0] as ParquetPart, file, 'final');
  const files = parts.map((_, i) => file.replace(/\.parquet$/, `-part-${i}.parquet`));
  try {
    for (let i = 0; i < parts.length; i++) await write(parts[i] as ParquetPart, files[i] as string, 'part');
    await ctx.runner.rows(parquetConcatStatement(files, file), 'properties');
  } finally {
    await Promise.all(files.map((f) => rm(f, { force: true })));
  }
}

/**
 * The slice a `limit` cuts, as a condition instead of a sort: the rows up to the last one
 * exported, whose key is read first (DuckDB ranks the slice's narrow columns and returns that one
 * row, however many rows the limit leaves in the slice). A newest-first export of time-ordered
 * files then stays one scan, with no part files to join. Rows of equal time come in the files'
 * order, as in the CSV export's scanned slices.
 */
async function cutByKey(ctx: ExportContext, scope: Scope, order: Order, slices: readonly Slice[]): Promise<{ scope: Scope; slices: readonly Slice[] }> {
  const cut = slices[slices.length - 1];
  if (!cut || cut.limit === null || order !== 'DESC' || scope.person) return { scope, slices };
  const relation = await relationFor(ctx, false, cut.from, cut.to);
  const [row] = await ctx.runner.rows(keyAtStatement(relation, ctx.teamId, scope.where, order, cut.limit), 'properties');
  if (!row) return { scope, slices };
  const last = { uuid: String(row.uuid), ms: (row.timestamp as Date).getTime() };
  return { scope: { ...scope, where: allOf(scope.where, upToKey(last, order)) }, slices: [...slices.slice(0, -1), { ...cut, limit: null }] };
}

/** A run of an export's slices written by one statement: a scan of time-ordered rows, or a sorted slice. */
interface ParquetPart {
  slice: Slice;
  scan: string | null;
}

/** The slices as parts: consecutive slices that scan time-ordered rows joined into one (see `newestFirstRelation`). */
async function parquetParts(ctx: ExportContext, scope: Scope, order: Order, slices: readonly Slice[]): Promise<ParquetPart[]> {
  const parts: ParquetPart[] = [];
  for (const slice of slices) {
    const last = parts[parts.length - 1];
    if (last?.scan && slice.limit === null) {
      // Newest first, so the slice lies just below the part: joined, they must still be one order.
      const joined = { from: slice.from, to: last.slice.to, limit: null };
      const scan = await newestFirstRelation(ctx, scope, order, joined);
      if (scan) {
        parts[parts.length - 1] = { slice: joined, scan };
        continue;
      }
    }
    parts.push({ slice, scan: await newestFirstRelation(ctx, scope, order, slice) });
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
