import { assembleEventsQuery, type CompiledSelect, type SqlFragment } from '../../../core/query';
import type { Row } from '../../db';
import type { QueryRunner } from './runner';
import type { RelationOptions } from '../types';
import { afterKey, allOf, asEvents, keyAtStatement, keysStatement, pageRowsStatement, rowsByKeysStatement, type EventKey, type Order } from './list-statements';

/**
 * The events API's reads, named for what it asks: keys of a page, a page's rows, the rows of
 * known keys, a select's rows. Each takes the request's compiled conditions (fragments with bound
 * values only) and a time range, builds the relation and the statement here, and gives rows; no
 * relation or statement text reaches the caller.
 */

/** Who reads: the request's runner (dialect, time limit, error mapping) and the project. */
export interface ReadContext {
  runner: QueryRunner;
  teamId: number;
}

/** Which rows: the request's conditions and how the relation must be built for them. */
export interface ReadScope {
  /** The request's conditions, without the project scope (added here). */
  where: SqlFragment;
  /** The conditions read person columns: the relation joins each event's person. */
  person: boolean;
  /** The rows are one person's: storage may read its person-clustered copies. */
  byPerson: boolean;
  /** The only distinct ids the rows can have, when the request names them. */
  distinctIds?: readonly string[];
}

/** [from, to) in epoch ms; null: unbounded on that side. */
export interface ReadRange {
  from: number | null;
  to: number | null;
}

/** The project's rows in the range, as `FROM` takes them, with persons joined when asked. */
export async function eventsFrom(
  ctx: ReadContext, person: boolean, range: ReadRange, byPerson = false, options: Pick<RelationOptions, 'distinctIds' | 'onePerUuid'> = {},
): Promise<string> {
  const bounds = { ...(range.from === null ? {} : { from: range.from }), ...(range.to === null ? {} : { to: range.to }) };
  const rel = await ctx.runner.relation(ctx.teamId, bounds, { byPerson, ...options });
  return asEvents(person ? ctx.runner.withPersons(rel.sql, ctx.teamId) : rel.sql);
}

/** The scope's rows in the range as an export reads them: a person's from the person copies where they cover it. */
export const scopeFrom = (ctx: ReadContext, scope: ReadScope, range: ReadRange): Promise<string> => eventsFrom(ctx, scope.person, range, scope.byPerson);

const msOf = (row: Row): number => (row.timestamp as Date).getTime();

/**
 * The keys of the first `limit` rows in list order (a person's list: with their distinct ids).
 * The relation may give a retried insert's copies (`onePerUuid`: ClickHouse reads without FINAL,
 * which would merge the whole slice to find its newest rows): copies share their whole sort key,
 * so they come next to each other and are kept once here. When copies were dropped from a full
 * read, the rows after the last key are read for what is still missing.
 */
export async function readKeys(ctx: ReadContext, scope: ReadScope, order: Order, range: ReadRange, limit: number): Promise<EventKey[]> {
  const relation = await eventsFrom(ctx, scope.person, range, scope.byPerson, { distinctIds: scope.distinctIds, onePerUuid: true });
  const keys: EventKey[] = [];
  const seen = new Set<string>();
  let where = scope.where;
  while (keys.length < limit) {
    const want = limit - keys.length;
    const rows = await ctx.runner.rows(keysStatement(relation, ctx.teamId, where, order, want, scope.byPerson, ctx.runner), 'properties');
    let last: EventKey | undefined;
    for (const r of rows) {
      last = { uuid: String(r.uuid), ms: msOf(r), ...(scope.byPerson ? { distinctId: String(r.distinct_id) } : {}) };
      // The engine's dedupe key: time and uuid, and the distinct id in a person copy (its key has it).
      const id = `${last.ms}\n${last.uuid}\n${last.distinctId ?? ''}`;
      if (seen.has(id)) continue;
      seen.add(id);
      keys.push(last);
    }
    if (rows.length < want || !last) break;
    where = allOf(scope.where, afterKey(last, order, ctx.runner));
  }
  return keys;
}

/** The first `limit` whole rows in list order, in one statement. */
export async function readPageRows(ctx: ReadContext, scope: ReadScope, order: Order, range: ReadRange, limit: number): Promise<Row[]> {
  const relation = await eventsFrom(ctx, scope.person, range, true, { distinctIds: scope.distinctIds });
  return ctx.runner.rows(pageRowsStatement(relation, ctx.teamId, scope.where, order, limit, ctx.runner), 'properties');
}

/**
 * The rows of `keys` (any order; a uuid stored twice may come twice). Keys that all carry their
 * distinct ids are read from the person copies too.
 */
export async function readRowsByKeys(ctx: ReadContext, keys: readonly EventKey[]): Promise<Row[]> {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const k of keys) {
    lo = Math.min(lo, k.ms);
    hi = Math.max(hi, k.ms);
  }
  const byPerson = keys.every((k) => k.distinctId !== undefined);
  // The caller keeps one row per uuid, so the relation may give a retried insert's copies.
  const ids = byPerson ? { distinctIds: [...new Set(keys.map((k) => k.distinctId as string))] } : {};
  const relation = await eventsFrom(ctx, false, { from: lo, to: hi + 1 }, byPerson, { ...ids, onePerUuid: true });
  return ctx.runner.rows(rowsByKeysStatement(relation, ctx.teamId, keys, ctx.runner));
}

/** The key of the `position`-th row (1-based) in list order, if there is one. */
export async function readKeyAt(ctx: ReadContext, scope: ReadScope, order: Order, range: ReadRange, position: number): Promise<EventKey | undefined> {
  const relation = await scopeFrom(ctx, scope, range);
  const [row] = await ctx.runner.rows(keyAtStatement(relation, ctx.teamId, scope.where, order, position), 'properties');
  return row ? { uuid: String(row.uuid), ms: msOf(row) } : undefined;
}

/** What a select reads: the compiled select, its order, and the window of rows after `offset`. */
export interface SelectRead {
  select: CompiledSelect;
  orderBy: string;
  range: ReadRange;
  limit: number;
  offset: number;
}

/** A select's rows in chunks, each under the request's time limit. */
export async function streamSelectRows(ctx: ReadContext, scope: Pick<ReadScope, 'where' | 'person'>, read: SelectRead): Promise<AsyncIterableIterator<Row[]>> {
  const statement = assembleEventsQuery({
    relation: await eventsFrom(ctx, scope.person, read.range),
    teamId: ctx.teamId,
    filters: scope.where,
    select: read.select,
    orderBy: read.orderBy,
    limit: read.limit,
    offset: read.offset,
    dialect: ctx.runner.dialect,
  });
  return ctx.runner.stream(statement, 'select');
}

/** A select's rows, all at once (the caller's `limit` bounds them). */
export async function readSelectRows(ctx: ReadContext, scope: Pick<ReadScope, 'where' | 'person'>, read: SelectRead): Promise<Row[]> {
  const out: Row[] = [];
  for await (const chunk of await streamSelectRows(ctx, scope, read)) for (const row of chunk) out.push(row);
  return out;
}
