import type { Expr, SelectEntry, SelectStatement } from './ast';
import { STAR_FIELDS } from './catalog';
import { compileSelectStatement, type CompiledStatement, type Origin } from './compile-statement';
import type { Dialect } from './dialect';
import { eventFilterExprs, type FilterExpr } from './filters';
import { at, invalidInput, LIMITS } from './limits';
import { parseExpression, parseOrderExpression, parseSelectExpression } from './parse';
import { printStatement } from './print';
import type { Typed } from './types';

/**
 * PostHog's EventsQuery (what the events table of its UI sends): `select`, `where` and `orderBy`
 * lists of HogQL expressions, `event`/`events`, property filters, `after`/`before`, `personId`,
 * `limit`/`offset`. It is turned into the statement tree a HogQL query parses to and compiled by
 * the same compiler, so it has the same catalog, binding and project scope. Three columns are
 * PostHog's and not expressions: `*` (the event as an object), `person` and `person_display_name`;
 * each is selected as plain columns, which `columns` says how to put together.
 */
export interface EventsQueryInput {
  select?: unknown;
  where?: unknown;
  orderBy?: unknown;
  event?: unknown;
  events?: unknown;
  properties?: unknown;
  fixedProperties?: unknown;
  after?: unknown;
  before?: unknown;
  limit?: unknown;
  offset?: unknown;
  filterTestAccounts?: unknown;
  actionId?: unknown;
}

/** What the query needs from the project and its persons. */
export interface EventsQueryContext {
  /** The project's `person_display_name_properties`. */
  displayNameProperties: readonly string[];
  /** The project's test account filters (`filterTestAccounts`). */
  testAccountFilters: unknown;
  /** `personId`'s distinct ids (empty: no such person), or null without `personId`. */
  personDistinctIds: readonly string[] | null;
}

/** One column of the answer, by the indexes of the statement's columns it is made of. */
export type EventsQueryColumn =
  | { kind: 'value'; index: number }
  /** `*`: the columns of STAR_FIELDS.events, in that order. */
  | { kind: 'event'; indexes: number[] }
  /** `person`: the event's distinct id, whose person the caller looks up. */
  | { kind: 'person'; index: number }
  /** `person_display_name`: the display name and the distinct id (whose person the caller looks up). */
  | { kind: 'display_name'; indexes: [number, number] };

export interface CompiledEventsQuery {
  statement: CompiledStatement;
  /** PostHog's `columns`: each entry as sent (comment included), or its alias. */
  columns: string[];
  types: string[];
  plan: EventsQueryColumn[];
  limit: number | null;
  offset: number;
  /** The query as HogQL text (the response's `hogql`), for the limit and offset run. */
  hogql(limit: number, offset: number): string;
}

/** PostHog's EventsQuery reads the last day unless told otherwise; `after: 'all'` reads everything. */
const DEFAULT_AFTER = '-24h';
const SPECIAL = /^\s*(\*|person|person_display_name)\s*(?:--.*)?$/s;
const COMMENTS = { lineComments: true } as const;

export function compileEventsQuery(input: EventsQueryInput, now: Date, context: EventsQueryContext, dialect?: Dialect): CompiledEventsQuery {
  const b = new StatementBuilder(context);
  const sent = stringList(input.select, 'select');
  const texts = sent.length ? sent : ['*'];
  texts.forEach((text, i) => b.column(text, i));
  const where = [
    ...stringList(input.where, 'where').map((text, i) => b.from(parseExpression(text, `where[${i}]`, 'where', COMMENTS), `where[${i}]`, 'where')),
    ...filters(input, now, context).map((f) => b.from(f.expr, f.attr, f.attr)),
  ];
  const orderBy = stringList(input.orderBy, 'orderBy').map((text, i) => b.order(text, i));
  const stmt: SelectStatement = {
    distinct: false, star: false, select: b.entries, from: { table: 'events', alias: null, pos: 0 },
    where, groupBy: [], having: [], orderBy, limit: null, offset: null,
  };
  const statement = compileSelectStatement(stmt, now, {
    origin: (expr) => b.origins.get(expr),
    aggregatesToHaving: true,
    groupBySelected: true,
    defaultOrder: (typed) => defaultOrder(texts, b.plan, typed),
    dialect,
  });
  return {
    statement,
    columns: b.columns,
    plan: b.plan,
    types: b.plan.map((c) => columnType(c, statement.types)),
    limit: count(input.limit, 'limit'),
    offset: count(input.offset, 'offset') ?? 0,
    hogql: (limit, offset) => printStatement(statement.resolved, limit, offset),
  };
}

/** The statement's select entries as the query's columns need them, and where each expression came from. */
class StatementBuilder {
  readonly origins = new WeakMap<Expr, Origin>();
  readonly entries: SelectEntry[] = [];
  readonly plan: EventsQueryColumn[] = [];
  readonly columns: string[] = [];

  constructor(private readonly context: EventsQueryContext) {}

  from(expr: Expr, label: string, attr: string): Expr {
    this.origins.set(expr, { label, attr });
    return expr;
  }

  /** The i-th column as sent: PostHog's three special ones, or an expression with an optional alias. */
  column(text: string, i: number): void {
    const special = SPECIAL.exec(text)?.[1];
    const add = (expr: Expr, alias: string | null = null) => this.entries.push({ expr, alias, text }) - 1;
    this.columns.push(text);
    if (special === '*') this.plan.push({ kind: 'event', indexes: STAR_FIELDS.events.map((name) => add(field(name))) });
    else if (special === 'person') this.plan.push({ kind: 'person', index: add(field('distinct_id')) });
    else if (special === 'person_display_name') this.plan.push({ kind: 'display_name', indexes: [add(this.displayName()), add(field('distinct_id'))] });
    else {
      const { expr, alias } = parseSelectExpression(text, `select[${i}]`, 'select', COMMENTS);
      this.plan.push({ kind: 'value', index: add(this.from(expr, `select[${i}]`, 'select'), alias) });
      if (alias !== null) this.columns[i] = alias;
    }
  }

  /** An `orderBy` entry; `person_display_name -- Person DESC` as PostHog's UI sends it orders by the name. */
  order(text: string, i: number): { expr: Expr; descending: boolean } {
    const special = /^\s*(person_display_name|person)(?:\s*--\s*Person)?(?:\s+(asc|desc))?\s*$/i.exec(text);
    if (special) return { expr: special[1] === 'person' ? field('distinct_id') : this.displayName(), descending: special[2]?.toLowerCase() === 'desc' };
    const order = parseOrderExpression(text, `orderBy[${i}]`, 'orderBy', COMMENTS);
    return { expr: this.from(byPosition(order.expr, this.plan, `orderBy[${i}]`), `orderBy[${i}]`, 'orderBy'), descending: order.descending };
  }

  private displayName(): Expr {
    return displayNameExpr(this.context.displayNameProperties);
  }
}

const field = (...chain: string[]): Expr => ({ kind: 'field', chain, pos: 0 });

/** PostHog's display name: the first of the project's display properties that is set, else the distinct id. */
function displayNameExpr(keys: readonly string[]): Expr {
  const args = [...keys.slice(0, 20).map((k) => field('person', 'properties', k)), field('distinct_id')];
  return { kind: 'call', name: 'coalesce', args, star: false, pos: 0 };
}

function filters(input: EventsQueryInput, now: Date, context: EventsQueryContext): FilterExpr[] {
  const after = input.after ?? DEFAULT_AFTER;
  const list = eventFilterExprs({ after: after === 'all' ? null : optional(after, 'after'), before: optional(input.before, 'before'), properties: input.properties }, now);
  const names = [optional(input.event, 'event'), ...stringList(input.events, 'events')].filter((e): e is string => !!e);
  if (names.length) {
    const literals = names.map((value): Expr => ({ kind: 'literal', value, pos: 0 }));
    const expr: Expr = literals.length === 1
      ? { kind: 'compare', op: '=', left: field('event'), right: literals[0]!, pos: 0 }
      : { kind: 'in', negated: false, operand: field('event'), list: literals, pos: 0 };
    list.push({ expr, attr: input.event ? 'event' : 'events' });
  }
  if (input.fixedProperties !== undefined && input.fixedProperties !== null) {
    list.push(...eventFilterExprs({ properties: input.fixedProperties }, now, { timeBounds: false }).map((f) => ({ ...f, attr: 'fixedProperties' })));
  }
  if (input.filterTestAccounts === true) {
    list.push(...eventFilterExprs({ properties: context.testAccountFilters }, now, { timeBounds: false }).map((f) => ({ ...f, attr: 'filterTestAccounts' })));
  }
  // No actions are kept here: as the events list, an action's events are none.
  if (input.actionId !== undefined && input.actionId !== null) list.push({ expr: { kind: 'literal', value: false, pos: 0 }, attr: 'actionId' });
  const ids = context.personDistinctIds;
  if (ids) {
    const expr: Expr = ids.length
      ? { kind: 'in', negated: false, operand: field('distinct_id'), list: ids.map((value) => ({ kind: 'literal', value, pos: 0 })), pos: 0 }
      : { kind: 'literal', value: false, pos: 0 };
    list.push({ expr, attr: 'personId' });
  }
  return list;
}

/** `ORDER BY 2`: the second column as sent, whatever columns the ones before it were made of. */
function byPosition(expr: Expr, plan: EventsQueryColumn[], label: string): Expr {
  if (expr.kind !== 'literal' || typeof expr.value !== 'number' || !Number.isInteger(expr.value)) return expr;
  const column = plan[expr.value - 1];
  if (!column) throw invalidInput(`ORDER BY position ${expr.value} is not in the select list ${at(expr.pos, label)}`, 'orderBy');
  return { ...expr, value: firstIndex(column) + 1 };
}

const firstIndex = (c: EventsQueryColumn): number => (c.kind === 'event' || c.kind === 'display_name' ? c.indexes[0]! : c.index);

/** PostHog's: count() first, else the first aggregate, else the newest events, else the first column. */
function defaultOrder(texts: readonly string[], plan: EventsQueryColumn[], typed: readonly Typed[]) {
  const count = texts.indexOf('count()');
  if (count >= 0) return [{ index: firstIndex(plan[count]!), descending: true }];
  const aggregate = typed.findIndex((t) => t.aggregate);
  if (aggregate >= 0) return [{ index: aggregate, descending: true }];
  const timestamp = texts.indexOf('timestamp');
  if (timestamp >= 0) return [{ index: firstIndex(plan[timestamp]!), descending: true }];
  return [{ index: 0, descending: false }];
}

function columnType(c: EventsQueryColumn, types: readonly string[]): string {
  if (c.kind === 'value' || c.kind === 'person') return types[c.index]!;
  return `Tuple(${c.indexes.map((i) => types[i]).join(', ')})`;
}

function stringList(value: unknown, attr: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) throw invalidInput(`${attr} must be a list of strings`, attr);
  if (value.length > LIMITS.expressions) throw invalidInput(`${attr} has more than ${LIMITS.expressions} entries`, attr);
  return value as string[];
}

function optional(value: unknown, attr: string): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw invalidInput(`${attr} must be a string`, attr);
  return value;
}

function count(value: unknown, attr: string): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw invalidInput(`${attr} must be a whole number`, attr);
  return value;
}
