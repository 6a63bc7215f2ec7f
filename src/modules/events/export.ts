import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { compileSelect } from '../../core/query';
import { csvRecord, EVENT_CSV_PERSON_COLUMNS, eventCsvColumns, spliceCsvRecords, type EventCsvColumn } from '../../core/events/csv';
import { AppError } from '../../errors';
import type { Logger } from '../../logger';
import { countListing } from '../../storage/events/read/counts';
import { csvRowSlices, NO_PERSON_FIELDS, personCsvFields } from './export-csv-rows';
import { orderedScan, slicesPropertyKeys, streamSliceRows, windowPropertyKeys, writeCsvSlice } from '../../storage/events/read/export-reads';
import { readKeyAt, streamSelectRows } from '../../storage/events/read/list-reads';
import { jsonSlices, streamedEnvelope, type StreamedPage } from './export-json';
import { parquetChunks } from './export-parquet';
import {
  afterCut, FILE_CHUNK, isSpare, MAX_CSV_PROPERTY_KEYS, planExport, plannedToRead, sliceScans, slicesAsRead, startingPoint, upToCut,
  type ExportContext, type KeyedSlice, type SliceScans, type Slice,
} from './export-plan';
import { filtersOnlyTime, frozenBefore, link, listScope, selectFragment, selectOrder, selectRow, type Scope } from './list';
import { formatCursor, type ExportFormat, type ListRequest } from './params';
import type { EventKey, Order } from '../../storage/events/read/list-statements';

export type { ExportContext } from './export-plan';

const encoder = new TextEncoder();

/**
 * `format=csv|json`: every matching event (or `limit` of them), streamed. JSON is the list's
 * envelope (`{results, next, previous, count}`, with select `{columns, types, results, hasMore,
 * next, previous}`) around the streamed results; CSV is the results alone, as PostHog's CSV
 * renderer writes them. Everything that can fail the request (parsing, compiling, planning, the
 * CSV header's key pass) runs before the response starts, so it still gets a proper error
 * status; after that the body is pulled by the client (backpressure) one slice at a time (a
 * slice cut while memory is tight is counted then: a failure there cuts the body short).
 */
export async function exportEvents(ctx: ExportContext, req: ListRequest, format: ExportFormat, requestUrl: string): Promise<Response> {
  const url = new URL(requestUrl);
  const chunks =
    format === 'parquet'
      ? await parquetChunks(ctx, req)
      : req.select.length
        ? await selectChunks(ctx, req, format, url)
        : format === 'json'
          ? await eventJsonChunks(ctx, req, url)
          : format === 'ndjson'
            ? await eventNdjsonChunks(ctx, req)
            : await eventCsvChunks(ctx, req);
  const filename = `events.${format}`;
  return new Response(toStream(chunks, ctx.logger), {
    headers: {
      'content-type': CONTENT_TYPES[format],
      'content-disposition': `attachment; filename="${filename}"`,
      'cache-control': 'no-store',
    },
  });
}

const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json',
  ndjson: 'application/x-ndjson',
  parquet: 'application/vnd.apache.parquet',
};

/**
 * `format=ndjson`: the event objects of `format=json`'s results, one a line, streamed as the JSON
 * export streams them (no envelope: nothing follows the last line).
 */
async function eventNdjsonChunks(ctx: ExportContext, req: ListRequest): Promise<AsyncGenerator<Uint8Array>> {
  const base = await listScope(ctx, req);
  const scope = base && (await startingPoint(ctx, req, base));
  if (!scope) return noChunks();
  // Planned, as the JSON export, for one row more than `limit`: the rows after it are then left unread.
  const slices = await planExport(ctx, req, scope, req.limit === null ? null : req.limit + 1);
  const scans = jsonScans(ctx, scope, req);
  return jsonSlices(ctx, slicesAsRead(ctx, scope, slices, req.order, scans), req.limit, sliceRows(ctx, scope, req.order, scans), { last: null, more: false }, { lines: true });
}

/**
 * A slice's rows for the JSON exports: from storage's ordered scan where it has one and no cap
 * cuts the slice, when `scan`. A scan orders rows of one time as its files hold them, not by
 * uuid as the list does: an export with a `limit` (JSON's may end in a `next` cursor, the last
 * row's time and uuid) reads its slices sorted, or the next page would give again the rows of
 * that time left after it; NDJSON gives the same rows in the same order.
 */
const sliceRows = (ctx: ExportContext, scope: Scope, order: Order, scans: SliceScans | undefined) => (slice: Slice, cap: number | null) =>
  streamSliceRows(ctx, scope, order, slice, cap, scans && cap === null ? scans(slice) : null);

/** The JSON exports' slices' ordered scans: none under a `limit` (see `sliceRows`), where every slice is sorted. */
const jsonScans = (ctx: ExportContext, scope: Scope, req: ListRequest): SliceScans | undefined => (req.limit === null ? sliceScans(ctx, scope, req.order) : undefined);

function toStream(chunks: AsyncGenerator<Uint8Array>, logger: Logger): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await chunks.next();
          if (next.done) controller.close();
          else controller.enqueue(next.value);
        } catch (error) {
          // The status is sent: all that is left is to cut the body short, which the client sees.
          logger.error('events export failed mid-stream', { error });
          controller.error(error);
        }
      },
      async cancel() {
        await chunks.return(undefined);
      },
    },
    { highWaterMark: 1 },
  );
}

async function eventCsvChunks(ctx: ExportContext, req: ListRequest): Promise<AsyncGenerator<Uint8Array>> {
  const base = await listScope(ctx, req);
  if (!base || req.limit === 0) return emptyCsv();
  const scope = await startingPoint(ctx, req, base);
  if (!scope) return emptyCsv();
  const slices = await planExport(ctx, req, scope, req.limit);
  if (slices.length === 0) return emptyCsv();
  // The header is that of the rows planned to be read: not of the rest of the window after a limit.
  const read = plannedToRead(slices);
  const lo = read.some((s) => s.from === null) ? null : Math.min(...read.map((s) => s.from as number));
  const hi = Math.max(...read.map((s) => s.to));
  // The file path lists a file's keys from the manifest when nothing but time filters the rows.
  const onlyTime = filtersOnlyTime(scope) && !req.cursor && req.offset === 0;
  const keys = ctx.runner.writesFiles
    ? await windowPropertyKeys(ctx, scope, { lo, hi }, req, onlyTime, MAX_CSV_PROPERTY_KEYS)
    : await slicesPropertyKeys(ctx, scope, read, MAX_CSV_PROPERTY_KEYS);
  if (keys.size > MAX_CSV_PROPERTY_KEYS) {
    throw new AppError('invalid_input', `These events have more than ${MAX_CSV_PROPERTY_KEYS} property keys: choose the columns with select.`, 'format');
  }
  const columns = eventCsvColumns(keys);
  await ctx.flushPersons();
  if (!ctx.runner.writesFiles) return withHeader(columns, csvRowSlices(ctx, scope, req.order, slicesAsRead(ctx, scope, slices, req.order), req.limit, columns));
  const scans = sliceScans(ctx, scope, req.order);
  return csvSlices(ctx, scope, req.order, slicesAsRead(ctx, scope, slices, req.order, scans), scans, req.limit, columns);
}

/**
 * `format=json`: the list's envelope, the events streamed as its `results`, then `next`,
 * `previous` and `count` (the listing's total, as the list counts it, run alongside). One row
 * more than `limit` is planned, as the list reads `limit + 1`, so `next` (the list's keyset
 * link) is given only when rows are left.
 */
async function eventJsonChunks(ctx: ExportContext, req: ListRequest, url: URL): Promise<AsyncGenerator<Uint8Array>> {
  const base = await listScope(ctx, req);
  const count = base ? countListing(ctx, base, req) : Promise.resolve(0);
  count.catch(() => undefined);
  const scope = base && (await startingPoint(ctx, req, base));
  const slices = scope ? await planExport(ctx, req, scope, req.limit === null ? null : req.limit + 1) : [];
  const page: StreamedPage = { last: null, more: false };
  const scans = scope ? jsonScans(ctx, scope, req) : undefined;
  const results = scope ? jsonSlices(ctx, slicesAsRead(ctx, scope, slices, req.order, scans), req.limit, sliceRows(ctx, scope, req.order, scans), page) : noChunks();
  const back = req.limit ?? req.offset;
  return streamedEnvelope('{"results":[', results, async () => ({
    next: page.more && page.last ? link(url, { cursor: formatCursor(page.last), offset: null, before: frozenBefore(req, url) }) : null,
    previous: req.offset > 0 ? link(url, { offset: req.offset - back > 0 ? String(req.offset - back) : null }) : null,
    count: await count,
  }));
}

async function* noChunks(): AsyncGenerator<Uint8Array> {}

async function* withHeader(columns: readonly EventCsvColumn[], records: AsyncGenerator<Uint8Array>): AsyncGenerator<Uint8Array> {
  yield encoder.encode(csvRecord(columns.map((c) => c.name)));
  yield* records;
}

async function* emptyCsv(): AsyncGenerator<Uint8Array> {
  yield encoder.encode(csvRecord(eventCsvColumns([]).map((c) => c.name)));
}

/** A slice's CSV file and its rows; `spliced` when it was written without the person columns. */
interface Written {
  file: string;
  spliced: boolean;
  rows: number;
}

const NO_PERSON = encoder.encode(NO_PERSON_FIELDS);

/**
 * The slices' CSV records, at most `limit` of them. Each slice is capped by what the slices
 * before it wrote, not by the plan's count: rows stored meanwhile make a slice larger than
 * counted, and the export still ends at `limit`. A slice is taken from `slices` when its write
 * starts (see `slicesAsRead`).
 */
async function* csvSlices(
  ctx: ExportContext, scope: Scope, order: Order, slices: AsyncIterator<Slice>, scans: SliceScans, limit: number | null, columns: readonly EventCsvColumn[],
): AsyncGenerator<Uint8Array> {
  yield encoder.encode(csvRecord(columns.map((c) => c.name)));
  const prefix = join(ctx.scratchDir, `events-export-${randomBytes(8).toString('hex')}`);
  const people = new Map<string, Uint8Array>();
  const personFields = (distinctId: string): Uint8Array => {
    let fields = people.get(distinctId);
    if (fields === undefined) {
      if (people.size >= 100_000) people.clear();
      const person = ctx.personOf(distinctId);
      fields = person ? encoder.encode(personCsvFields(person)) : NO_PERSON;
      people.set(distinctId, fields);
    }
    return fields;
  };
  // Where the person columns go: they are consecutive (the header is sorted; all start `person.`).
  const before = columns.findIndex((c) => c.kind === 'person');
  if (columns.slice(before, before + EVENT_CSV_PERSON_COLUMNS.length).some((c) => c.kind !== 'person')) throw new Error('the person columns of a CSV export must be consecutive');
  const files: string[] = [];
  const cut = cutByKey(ctx, scope, order);
  const write = async (planned: Slice, cap: number | null): Promise<Written> => {
    const file = `${prefix}-${files.length}.csv`;
    files.push(file); // removed at the end whatever happens
    const { slice, where } = await cut.read(planned, cap);
    // A planned slice read under the export's own conditions: its scan as `slicesAsRead` may have asked for it.
    const scan = slice.limit !== null ? null : slice === planned ? scans(slice) : orderedScan(ctx, scope, order, slice, where);
    return { file, ...(await writeCsvSlice(ctx, { ...scope, where }, order, slice, columns, cap, file, scan)) };
  };
  const next = async (cap: number | null): Promise<Written | null> => {
    if (cap !== null && cap <= 0) return null;
    const slice = await slices.next();
    const planned = slice.done ? cut.rest() : slice.value;
    return planned ? write(planned, cap) : null;
  };
  let written = 0;
  const left = () => (limit === null ? null : limit - written);
  // DuckDB writes slice k+1 while slice k is sent; at most two slice files exist at a time. (Two
  // ahead was faster alone with sorted slices, but two sorts at once raise the memory; with
  // unsorted slices it was slower. See bench/NOTES.md.) Slice k+1 starts once slice k is
  // written, so its cap is known.
  let pending: Promise<Written | null> = next(left());
  try {
    for (let done = await pending; done !== null; done = await pending) {
      written += done.rows;
      pending = next(left());
      pending.catch(() => undefined);
      yield* sliceBytes(done, (chunk) => spliceCsvRecords(chunk, before, personFields));
      await rm(done.file, { force: true });
    }
  } finally {
    await pending.catch(() => undefined);
    await Promise.all(files.map((f) => rm(f, { force: true })));
  }
}

/** How the CSV export reads the slice a `limit` cuts (see `cutByKey`). */
interface KeyedCut {
  /** The slice as it is read, and the condition its rows meet. */
  read(slice: Slice, cap: number | null): Promise<KeyedSlice>;
  /**
   * Once the planned slices are read: the rest of a keyed cut slice below its key, as a slice
   * read only when rows went missing, when no planned slice followed the cut (the cut reached
   * the window's far end); null otherwise.
   */
  rest(): Slice | null;
}

/**
 * The slice a `limit` cuts, read up to the last row the export sends instead of sorted and cut
 * (as the Parquet export's `cutByKey`): that row's key is read first, at the rows the export
 * still needs when the slice is read, so the slice can be an ordered scan like the ones before
 * it. The rest of the window after it (read only when rows went missing) then starts just after
 * that row, the cut slice's rows below it included. Other slices are read as planned.
 */
function cutByKey(ctx: ExportContext, scope: Scope, order: Order): KeyedCut {
  let cut: { slice: Slice; key: EventKey } | null = null;
  return {
    async read(slice, cap) {
      if (isSpare(slice)) {
        if (!cut) return { slice, where: scope.where };
        const rest = afterCut(scope, order, cut.slice, cut.key, slice.from);
        cut = null;
        return rest;
      }
      if (slice.limit === null || cap === null || order !== 'DESC' || scope.person) return { slice, where: scope.where };
      const key = await readKeyAt(ctx, scope, order, slice, cap);
      // Fewer rows than the export still needs: the slice is read whole.
      if (!key) return { slice: { ...slice, limit: null }, where: scope.where };
      cut = { slice, key };
      return upToCut(scope, order, slice, key);
    },
    // No rest planned after the cut: the cut slice reached the window's far end.
    rest: () => (cut ? { ...cut.slice, rows: 0, limit: 0 } : null),
  };
}

/**
 * A slice file's bytes in chunks, through `splice` when it was written without the person
 * columns. Large reads: each pull of the response is one chunk, so fewer, bigger chunks cost less.
 */
async function* sliceBytes(written: Written, splice: (chunk: Uint8Array) => { bytes: Uint8Array; consumed: number }): AsyncGenerator<Uint8Array> {
  const blob = Bun.file(written.file);
  for (let at = 0, size = FILE_CHUNK; at < blob.size; ) {
    const chunk = new Uint8Array(await blob.slice(at, at + size).arrayBuffer());
    if (chunk.length === 0) throw new Error('an export slice file shrank while it was read');
    if (!written.spliced) {
      at += chunk.length;
      yield chunk;
      continue;
    }
    // A record the chunk cuts is read again with the next chunk; one longer than the chunk doubles it.
    const { bytes, consumed } = splice(chunk);
    if (consumed === 0) {
      if (at + size >= blob.size) throw new Error('an export slice ended inside a CSV record');
      size *= 2;
      continue;
    }
    at += consumed;
    size = FILE_CHUNK;
    yield bytes;
  }
}

/**
 * A select export: the selected columns, as CSV records, or as JSON arrays in the select list's
 * envelope (`hasMore` and `next` as the select list gives them: one row more than `limit` read).
 */
async function selectChunks(ctx: ExportContext, req: ListRequest, format: ExportFormat, url: URL): Promise<AsyncGenerator<Uint8Array>> {
  const compiled = compileSelect(req.select, req.where, ctx.now, ctx.runner.dialect);
  const scope = await listScope(ctx, req, selectFragment(compiled));
  const rows = scope
    ? await streamSelectRows(ctx, scope, {
        select: compiled,
        orderBy: selectOrder(compiled, req),
        range: { from: req.afterMs, to: req.beforeMs },
        limit: req.limit === null ? Number.MAX_SAFE_INTEGER : req.limit + 1,
        offset: req.offset,
      })
    : null;
  const max = req.limit ?? Number.POSITIVE_INFINITY;
  let hasMore = false;
  const results = (async function* () {
    if (format === 'csv') yield encoder.encode(csvRecord(compiled.columns));
    let sent = 0;
    if (!rows) return;
    for await (const chunk of rows) {
      let text = '';
      for (const row of chunk) {
        if (sent >= max) {
          hasMore = true;
          break;
        }
        const values = selectRow(compiled, row);
        text += format === 'csv' ? csvRecord(values) : format === 'ndjson' ? `${JSON.stringify(values)}\n` : (sent ? ',' : '') + JSON.stringify(values);
        sent++;
      }
      if (text) yield encoder.encode(text);
      if (hasMore) return;
    }
  })();
  if (format !== 'json') return results;
  const before = frozenBefore(req, url);
  const back = req.limit ?? req.offset;
  return streamedEnvelope(`{"columns":${JSON.stringify(compiled.columns)},"types":${JSON.stringify(compiled.types)},"results":[`, results, async () => ({
    hasMore,
    next: hasMore ? link(url, { offset: String(req.offset + (req.limit ?? 0)), before }) : null,
    previous: req.offset > 0 ? link(url, { offset: req.offset - back > 0 ? String(req.offset - back) : null, before }) : null,
  }));
}
