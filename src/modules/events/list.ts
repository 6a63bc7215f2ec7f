import { compileEventFilters, compileSelect, isEmptySql, type CompiledSelect, type SqlFragment } from '../../core/query';
import type { PropertyType } from '../../core/ingest/property-type';
import { AppError } from '../../errors';
import type { Row } from '../../storage/db';
import { selectValue, toEventObject, type EventObject, type PersonObject } from './event-object';
import { formatCursor, type ListRequest } from './params';
import { countListing, type FileCounts } from '../../storage/events/read/counts';
import { afterKey, allOf, needsPersonProperties, type EventKey, type Order } from '../../storage/events/read/list-statements';
import { readKeys, readPageRows, readRowsByKeys, readSelectRows } from '../../storage/events/read/list-reads';
import type { QueryRunner } from '../../storage/events/read/runner';

/** What a list query needs besides the request: the runner, the team and lookups it can call. */
export interface ListContext {
  runner: QueryRunner;
  teamId: number;
  now: Date;
  /** Condition for `person_id` (the person's distinct ids), or 'none' when no such person exists. */
  personFilter: SqlFragment | 'none' | null;
  /** The distinct ids `personFilter` names, when it names some. */
  personDistinctIds?: readonly string[];
  /** Make in-memory person changes visible to SQL (before joining persons). */
  flushPersons(): Promise<void>;
  /** The `property_type` of the named event or person properties that have one, as their definitions say now. */
  propertyTypes(kind: 'event' | 'person', keys: readonly string[]): Promise<Map<string, PropertyType>>;
  personOf(distinctId: string): PersonObject | null;
  /** Per-file counts remembered across requests (see FileCounts). */
  counts: FileCounts;
}

export interface EventsPage {
  count: number;
  next: string | null;
  previous: string | null;
  results: EventObject[];
}

export interface SelectPage {
  columns: string[];
  types: string[];
  results: unknown[][];
  hasMore: boolean;
  next: string | null;
  previous: string | null;
}

/**
 * Newest-first lists read progressively older slices of time (most requests are answered by the
 * last hour), each slice pruning storage's files by time before DuckDB opens them.
 */
const SLICE_WIDTHS_MS = [3_600_000, 86_400_000, 7 * 86_400_000, 30 * 86_400_000, Number.POSITIVE_INFINITY];

export interface Scope {
  /** The request's conditions (filters, person), without the team scope. */
  where: SqlFragment;
  /** The same without the time bounds: what rows already known to lie inside them must meet. */
  conditions: SqlFragment;
  person: boolean;
  /** The rows are one person's (`distinct_id` or `person_id`): storage may read person-clustered copies. */
  byPerson: boolean;
  /** The distinct ids the request filters on (`distinct_id`, or `person_id`'s), when it does: storage may read only their rows. */
  distinctIds?: readonly string[];
}

/** Nothing but the time bounds filters the rows: no condition, none on persons. */
export const filtersOnlyTime = (scope: Pick<Scope, 'conditions' | 'person'>): boolean => !scope.person && isEmptySql(scope.conditions);

/**
 * The request's filters as one condition; null when nothing can match (an unknown person or
 * action). `alsoRuns` is other SQL of the same statement (a compiled select), checked for
 * person properties too.
 */
export async function listScope(ctx: ListContext, req: ListRequest, alsoRuns?: SqlFragment): Promise<Scope | null> {
  if (ctx.personFilter === 'none' || req.actionId) return null;
  const { dialect } = ctx.runner;
  const where = allOf(compileEventFilters(req.filters, ctx.now, { dialect }), ctx.personFilter);
  const conditions = allOf(compileEventFilters(req.filters, ctx.now, { timeBounds: false, dialect }), ctx.personFilter);
  const person = needsPersonProperties(where, alsoRuns);
  if (person) await ctx.flushPersons();
  const byPerson = !!req.filters.distinct_id || ctx.personFilter !== null;
  // Both filters at once keep the rows of the one distinct id (of the person, or none).
  const distinctIds = req.filters.distinct_id ? [req.filters.distinct_id] : ctx.personDistinctIds;
  return { where, conditions, person, byPerson, ...(distinctIds ? { distinctIds } : {}) };
}

/** The time window a list reads: the request's bounds narrowed by the cursor. */
export function listWindow(req: ListRequest): { bottom: number | null; top: number } {
  const c = req.cursor;
  if (!c) return { bottom: req.afterMs, top: req.beforeMs };
  if (req.order === 'DESC') return { bottom: req.afterMs, top: Math.min(req.beforeMs, c.ms + 1) };
  return { bottom: req.afterMs === null ? c.ms : Math.max(req.afterMs, c.ms), top: req.beforeMs };
}

/**
 * Phase 1: the keys of the first `need` rows in list order. Descending lists walk back through
 * the slices, each asked only for what is still missing; ascending ones read the window at once.
 */
export async function findKeys(ctx: ListContext, scope: Scope, order: Order, window: { bottom: number | null; top: number }, need: number): Promise<EventKey[]> {
  const keys: EventKey[] = [];
  const read = async (from: number | null, to: number) => {
    keys.push(...(await readKeys(ctx, scope, order, { from, to }, need - keys.length)));
  };
  if (order === 'ASC') {
    await read(window.bottom, window.top);
    return keys;
  }
  let upper = window.top;
  for (const width of SLICE_WIDTHS_MS) {
    const floor = window.top - width;
    const lower = window.bottom === null ? (Number.isFinite(floor) ? floor : null) : Math.max(window.bottom, floor);
    if (lower !== null && lower >= upper) continue;
    await read(lower, upper);
    if (keys.length >= need || lower === null || lower <= (window.bottom ?? Number.NEGATIVE_INFINITY)) break;
    upper = lower;
  }
  return keys;
}

/**
 * A person's list reads whole rows in one statement over the window, unsliced: storage's person
 * copies hold their rows of a day in one or two row groups, the groups the keys would be read
 * from anyway, so a second pass for the rows would only decompress them again. Deep pages
 * (offsets beyond PERSON_ONE_PHASE_ROWS) read their keys first, as other lists do.
 */
const PERSON_ONE_PHASE_ROWS = 1_000;

async function personRows(ctx: ListContext, scope: Scope, order: Order, window: { bottom: number | null; top: number }, need: number): Promise<Row[]> {
  return readPageRows(ctx, scope, order, { from: window.bottom, to: window.top }, need);
}

/**
 * Phase 2: the rows of the page's keys, in the keys' order. Keys of a person's list carry their
 * distinct ids, and the rows are read from the person copies too.
 */
export async function fetchRows(ctx: ListContext, keys: readonly EventKey[]): Promise<Row[]> {
  if (keys.length === 0) return [];
  // One row per uuid is kept (the first read): storage may give a retried insert's copies.
  const byUuid = new Map<string, Row>();
  for (const row of await readRowsByKeys(ctx, keys)) {
    if (!byUuid.has(String(row.uuid))) byUuid.set(String(row.uuid), row);
  }
  return keys.map((k) => byUuid.get(k.uuid)).filter((r): r is Row => r !== undefined);
}

/**
 * A page's rows are read in key order until their stored text passes PAGE_MAX_BYTES; the keys
 * after that are left to `next`. Events are up to 1 MiB each (EVENT_LIMITS), so a page of 1,000
 * could be a gigabyte in memory at once; a page of usual events stays whole. The first read
 * takes a default page's keys; the next ones as many as the bytes seen so far say will fit.
 */
export const PAGE_MAX_BYTES = 32 * 1024 * 1024;
const FIRST_FETCH = 100;

const rowBytes = (row: Row): number =>
  (typeof row.properties === 'string' ? row.properties.length : 0) + (typeof row.elements_chain === 'string' ? row.elements_chain.length : 0);

/** The rows of `keys` in their order, as many as fit PAGE_MAX_BYTES (at least one), and how many keys they cover. */
async function fetchPage(ctx: ListContext, keys: readonly EventKey[]): Promise<{ rows: Row[]; used: number }> {
  const rows: Row[] = [];
  let used = 0;
  let bytes = 0;
  let take = Math.min(keys.length, FIRST_FETCH);
  while (used < keys.length && take > 0) {
    const batchKeys = keys.slice(used, used + take);
    const batch = await fetchRows(ctx, batchKeys);
    // In key order, less any row gone since its key was read: the page ends at the row that fills it.
    let next = 0;
    for (const key of batchKeys) {
      used++;
      const row = batch[next];
      if (row === undefined || String(row.uuid) !== key.uuid) continue;
      next++;
      rows.push(row);
      bytes += rowBytes(row);
      if (bytes >= PAGE_MAX_BYTES) return { rows, used };
    }
    const perRow = bytes / Math.max(1, rows.length);
    take = Math.min(keys.length - used, Math.max(1, Math.floor((PAGE_MAX_BYTES - bytes) / Math.max(1, perRow))));
  }
  return { rows, used };
}

const EMPTY_PAGE: EventsPage = { count: 0, next: null, previous: null, results: [] };

/**
 * A page of events, newest first: the keys (phase 1), then their rows (phase 2), with the total
 * count run alongside. `next` freezes the listing's upper bound (`before`) and carries a keyset
 * `cursor` (the last row's time and uuid), so it neither repeats nor skips rows while new events
 * arrive, and costs the same however deep it goes. `count` is the whole listing's total, the
 * same on every page.
 */
export async function listEvents(ctx: ListContext, req: ListRequest, requestUrl: string): Promise<EventsPage> {
  const scope = await listScope(ctx, req);
  if (!scope) return EMPTY_PAGE;
  const limit = req.limit ?? 100;
  const count = countListing(ctx, scope, req);
  count.catch(() => undefined);
  const cursor = req.cursor ? afterKey(req.cursor, req.order, ctx.runner) : null;
  const pageScope = { ...scope, where: allOf(scope.where, cursor) };
  const need = req.offset + limit + 1;
  let keys: EventKey[];
  let rows: Row[];
  let shown = limit;
  if (scope.byPerson && need <= PERSON_ONE_PHASE_ROWS) {
    const all = await personRows(ctx, pageScope, req.order, listWindow(req), need);
    keys = all.map((r) => ({ uuid: String(r.uuid), ms: (r.timestamp as Date).getTime() }));
    rows = all.slice(req.offset, req.offset + limit);
  } else {
    keys = await findKeys(ctx, pageScope, req.order, listWindow(req), need);
    const page = await fetchPage(ctx, keys.slice(req.offset, req.offset + limit));
    rows = page.rows;
    shown = page.used;
  }
  const pageKeys = keys.slice(req.offset, req.offset + shown);
  const results = rows.map((row) => toEventObject(row, ctx.personOf(String(row.distinct_id))));
  const last = pageKeys[pageKeys.length - 1];
  const url = new URL(requestUrl);
  return {
    count: await count,
    next: keys.length > req.offset + shown && last ? link(url, { cursor: formatCursor(last), offset: null, before: frozenBefore(req, url) }) : null,
    previous: req.offset > 0 ? link(url, { offset: req.offset - limit > 0 ? String(req.offset - limit) : null }) : null,
    results,
  };
}

/** A `select` query: PostHog's `{columns, types, results}` plus `hasMore` and offset links. */
export async function selectEvents(ctx: ListContext, req: ListRequest, requestUrl: string): Promise<SelectPage> {
  const compiled = compileSelect(req.select, req.where, ctx.now, ctx.runner.dialect);
  const limit = req.limit ?? 100;
  const empty = { columns: compiled.columns, types: compiled.types, results: [], hasMore: false, next: null, previous: null };
  const scope = await listScope(ctx, req, selectFragment(compiled));
  if (!scope) return empty;
  if (compiled.countOnly && req.offset === 0 && limit > 0) {
    // The listing's total: files wholly inside the bounds counted from the manifest (or once per
    // filter), instead of a scan of every row's time under the bound.
    return { ...empty, results: [[selectValue(await countListing(ctx, scope, req), compiled.types[0] ?? '')]] };
  }
  const rows = await readSelectRows(ctx, scope, {
    select: compiled,
    orderBy: selectOrder(compiled, req),
    range: { from: req.afterMs, to: req.beforeMs },
    limit: limit + 1,
    offset: req.offset,
  });
  const url = new URL(requestUrl);
  const before = frozenBefore(req, url);
  const hasMore = rows.length > limit;
  return {
    columns: compiled.columns,
    types: compiled.types,
    results: rows.slice(0, limit).map((r) => selectRow(compiled, r)),
    hasMore,
    next: hasMore ? link(url, { offset: String(req.offset + limit), before }) : null,
    previous: req.offset > 0 ? link(url, { offset: req.offset - limit > 0 ? String(req.offset - limit) : null, before }) : null,
  };
}

export const selectRow = (compiled: CompiledSelect, row: Row): unknown[] => compiled.aliases.map((alias, i) => selectValue(row[alias], compiled.types[i] ?? ''));

/** The select's SQL text, so the person join is added when only the select names a person property. */
export const selectFragment = (c: CompiledSelect): SqlFragment => ({ sql: [c.selectSql, c.whereSql ?? '', c.havingSql ?? ''].join(' '), params: [] });

/**
 * `orderBy` of a select query: entries of the select list (or their aliases), `-` for descending.
 * Without it, PostHog's default order, then every other column, so ties come out the same way
 * on every run (and pages do not overlap).
 */
export function selectOrder(compiled: CompiledSelect, req: ListRequest): string {
  if (!req.selectOrder) {
    const lead = compiled.orderBySql.split(' ')[0];
    return [compiled.orderBySql, ...compiled.aliases.filter((a) => a !== lead).map((a) => `${a} ASC`)].join(', ');
  }
  return req.selectOrder
    .map((entry) => {
      const desc = entry.startsWith('-');
      const name = desc ? entry.slice(1) : entry;
      let i = req.select.indexOf(name);
      if (i < 0) i = compiled.columns.indexOf(name);
      if (i < 0) throw new AppError('invalid_input', `orderBy: '${name.slice(0, 100)}' is not in select`, 'orderBy');
      return `${compiled.aliases[i]} ${desc ? 'DESC' : 'ASC'}`;
    })
    .join(', ');
}

/** Later pages keep the first page's upper bound, so events arriving meanwhile stay out of them. */
export const frozenBefore = (req: ListRequest, url: URL): string | null => (req.beforeGiven ? url.searchParams.get('before') : req.beforeIso);

export function link(url: URL, changes: Record<string, string | null>): string {
  const params = new URLSearchParams(url.search);
  for (const [key, value] of Object.entries(changes)) {
    if (value === null) params.delete(key);
    else params.set(key, value);
  }
  const query = params.toString();
  return `${url.origin}${url.pathname}${query ? `?${query}` : ''}`;
}
