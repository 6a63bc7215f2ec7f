import { hotColumnFor } from '../events/columns';
import { checkRe2Syntax } from './regex';
import type { Dialect } from './dialect';
import { jsonPointer } from './dialect-duckdb';
import { joinSql, sql, trusted, type SqlFragment } from './sql';
import {
  asDate, asDatetime, asDouble, asString, derive, fail, isTemporal, literalInstant, PREC, TYPE_NAMES,
  unify, type Site, type Typed, type ValueType,
} from './types';
import { formatInstant, instantFromDate } from './dates';

/**
 * The whitelist. A request can name only the fields and functions listed here; what each one
 * computes is written here, in the dialect's spelling, and request values reach it only as bound
 * parameters. The engines' table and file functions (DuckDB's
 * table and file functions (read_csv, glob, query, …), settings and `team_id` are not listed, so
 * they are unreachable: naming them is a 400.
 */

type Column = { sql: string; type: ValueType; nullable: boolean; eventTime?: boolean };

/** The tables a HogQL statement may read (`FROM events`, `FROM persons`). */
export type TableName = 'events' | 'persons';

const EVENT_COLUMNS: Record<string, Column> = {
  uuid: { sql: 'uuid', type: 'string', nullable: false },
  event: { sql: 'event', type: 'string', nullable: false },
  distinct_id: { sql: 'distinct_id', type: 'string', nullable: false },
  person_id: { sql: 'person_id', type: 'string', nullable: true },
  timestamp: { sql: 'timestamp', type: 'datetime', nullable: false, eventTime: true },
  created_at: { sql: 'created_at', type: 'datetime', nullable: false },
  elements_chain: { sql: 'elements_chain', type: 'string', nullable: false },
};

/**
 * An event's person as storage joins it in (PostHog's `events.person`): NULL for a distinct id
 * without a person. The relation the events API reads gains these columns only when a compiled
 * fragment names one of them (`readsPersonColumns`).
 */
const EVENT_PERSON_COLUMNS: Record<string, Column> = {
  created_at: { sql: 'person_created_at', type: 'datetime', nullable: true },
  is_identified: { sql: 'person_is_identified', type: 'boolean', nullable: true },
};

/** PostHog's `persons` table: `id` is the person's uuid, as `person.id` on events. */
const PERSON_COLUMNS: Record<string, Column> = {
  id: { sql: 'id', type: 'string', nullable: false },
  created_at: { sql: 'created_at', type: 'datetime', nullable: false },
  is_identified: { sql: 'is_identified', type: 'boolean', nullable: false },
};

export const COLUMN_NAMES = Object.keys(EVENT_COLUMNS);

/** What `SELECT *` gives per table (PostHog's order; `team_id` and joins never). */
export const STAR_FIELDS: Record<TableName, readonly string[]> = {
  events: ['uuid', 'event', 'properties', 'timestamp', 'distinct_id', 'elements_chain', 'created_at'],
  persons: ['id', 'created_at', 'properties', 'is_identified'],
};

/** First parts of a field name per table: a table alias must not be one (the field would lose its head). */
export const FIELD_HEADS: Record<TableName, ReadonlySet<string>> = {
  events: new Set([...Object.keys(EVENT_COLUMNS), 'properties', 'person']),
  persons: new Set([...Object.keys(PERSON_COLUMNS), 'properties', 'pdi']),
};

/** Columns of the joined relations, by the names compiled SQL gives them. */
const JOINED_PERSON_SQL = ['person_properties', ...Object.values(EVENT_PERSON_COLUMNS).map((c) => c.sql)];
const PERSON_JOIN = new RegExp(`\\b(${JOINED_PERSON_SQL.join('|')})\\b`);
const PDI_JOIN = /\bpdi_distinct_id\b/;

/**
 * Whether compiled SQL reads the event's person (storage then joins persons in). Catalog names are
 * the only identifiers compiled SQL holds and request values are bound, so the text tells.
 */
export const readsPersonColumns = (...fragments: Array<SqlFragment | null | undefined>): boolean =>
  fragments.some((f) => !!f && PERSON_JOIN.test(f.sql));

/** Whether compiled SQL over persons reads `pdi.distinct_id` (one row per distinct id then). */
export const readsDistinctIds = (...fragments: Array<SqlFragment | null | undefined>): boolean =>
  fragments.some((f) => !!f && PDI_JOIN.test(f.sql));

const column = (sqlText: string, type: ValueType, nullable: boolean): Typed => ({
  ...trusted(sqlText), type, nullable, prec: PREC.atom, aggregate: false, columns: true,
});
const columnOf = (c: Column): Typed => ({ ...column(c.sql, c.type, c.nullable), ...(c.eventTime ? { eventTime: true } : {}) });
const own = (columns: Record<string, Column>, name: string | undefined): Column | undefined =>
  name !== undefined && Object.prototype.hasOwnProperty.call(columns, name) ? columns[name] : undefined;

export { jsonPointer };

/**
 * A property of the event (`properties`, whose hot keys have their own columns), of its person
 * (`person_properties`, joined by storage) or of a row of `persons` (`person_row`: its own
 * `properties`, no hot columns).
 */
export function propertyAccess(d: Dialect, source: 'properties' | 'person_properties' | 'person_row', keys: readonly string[]): Typed {
  const hot = source === 'properties' && keys.length === 1 ? hotColumnFor(keys[0] as string) : undefined;
  if (hot) return column(hot, 'string', true);
  const json = trusted(source === 'person_row' ? 'properties' : source);
  return { ...column('', 'string', true), ...d.jsonText(json, keys) };
}

/**
 * A field of `table`: `event`, `properties.$browser`, `properties.a.b`, `person.properties.email`,
 * `person.id`, …; on persons `id`, `properties.email`, `pdi.distinct_id`.
 */
export function resolveField(d: Dialect, chain: readonly string[], site: Site, table: TableName = 'events'): Typed {
  const resolved = table === 'persons' ? personsField(d, chain) : eventsField(d, chain);
  return resolved ?? fail(site, `Unknown field '${chain.join('.').slice(0, 100)}'`);
}

function eventsField(d: Dialect, chain: readonly string[]): Typed | undefined {
  const [head, ...rest] = chain as [string, ...string[]];
  const c = rest.length === 0 ? own(EVENT_COLUMNS, head) : undefined;
  if (c) return columnOf(c);
  if (head === 'properties') return rest.length ? propertyAccess(d, 'properties', rest) : column('properties', 'json', false);
  if (head !== 'person' || rest.length === 0) return undefined;
  if (rest[0] === 'properties') {
    return rest.length > 1 ? propertyAccess(d, 'person_properties', rest.slice(1)) : column('person_properties', 'json', true);
  }
  if (rest.length !== 1) return undefined;
  if (rest[0] === 'id') return column('person_id', 'string', true);
  const joined = own(EVENT_PERSON_COLUMNS, rest[0]);
  return joined && columnOf(joined);
}

function personsField(d: Dialect, chain: readonly string[]): Typed | undefined {
  const [head, ...rest] = chain as [string, ...string[]];
  const c = rest.length === 0 ? own(PERSON_COLUMNS, head) : undefined;
  if (c) return columnOf(c);
  if (head === 'properties') return rest.length ? propertyAccess(d, 'person_row', rest) : column('properties', 'json', false);
  // PostHog's `persons.pdi`: joined one row per distinct id.
  if (head === 'pdi' && rest.length === 1 && rest[0] === 'distinct_id') return column('pdi_distinct_id', 'string', false);
  if (head === 'pdi' && rest.length === 1 && rest[0] === 'person_id') return columnOf(PERSON_COLUMNS.id as Column);
  return undefined;
}

export interface CallContext {
  site: Site;
  now: Date;
  dialect: Dialect;
}

export interface FunctionDef {
  minArgs: number;
  maxArgs: number;
  aggregate: boolean;
  /** `count(*)` only. */
  star?: boolean;
  compile(args: Typed[], ctx: CallContext): Typed;
}

const fn = (minArgs: number, maxArgs: number, compile: FunctionDef['compile'], extra: Partial<FunctionDef> = {}): FunctionDef => ({
  minArgs, maxArgs, aggregate: false, compile, ...extra,
});
const agg = (compile: FunctionDef['compile'], minArgs = 1, maxArgs = 1, extra: Partial<FunctionDef> = {}): FunctionDef =>
  fn(minArgs, maxArgs, compile, { aggregate: true, ...extra });

const unary = (build: (a: Typed, ctx: CallContext) => SqlFragment, type: ValueType, extra: Partial<Typed> = {}) =>
  fn(1, 1, (args, ctx) => derive(build(args[0] as Typed, ctx), type, args, extra));

const datetimeOf = (t: Typed, ctx: CallContext) => asDatetime(ctx.dialect, t, ctx.site);
const startOf = (unit: Parameters<Dialect['startOf']>[0], type: ValueType) =>
  unary((a, ctx) => ctx.dialect.startOf(unit, datetimeOf(a, ctx)), type);
const aggregateOf = (name: Parameters<Dialect['aggregate']>[0], ctx: CallContext, arg: Typed | undefined) =>
  ctx.dialect.aggregate(name, arg ?? null);

/** The casts hide bad values, not impossible casts: TIMESTAMP to BIGINT would fail the query. */
const scalar = (t: Typed, ctx: CallContext): Typed =>
  isTemporal(t) || t.type === 'interval' ? fail(ctx.site, `Expected a number or text, got ${TYPE_NAMES[t.type]}`) : t;

/** Keys are lower case; lookup is case-insensitive (`COUNT()` works as in ClickHouse). */
const FUNCTIONS: Record<string, FunctionDef> = {
  count: agg((args, ctx) => derive(aggregateOf('count', ctx, args[0]), 'integer', args, { nullable: false }), 0, 1, { star: true }),
  uniq: agg((args, ctx) => derive(aggregateOf('uniq', ctx, args[0]), 'integer', args, { nullable: false })),
  sum: agg((args, ctx) => derive(aggregateOf('sum', ctx, asDouble(ctx.dialect, args[0] as Typed, ctx.site)), 'float', args, { nullable: true })),
  avg: agg((args, ctx) => derive(aggregateOf('avg', ctx, asDouble(ctx.dialect, args[0] as Typed, ctx.site)), 'float', args, { nullable: true })),
  min: agg(([a], ctx) => derive(aggregateOf('min', ctx, a), (a as Typed).type, [a as Typed], { nullable: true })),
  max: agg(([a], ctx) => derive(aggregateOf('max', ctx, a), (a as Typed).type, [a as Typed], { nullable: true })),

  now: fn(0, 0, (_args, ctx) => literalInstant(ctx.dialect, formatInstant(instantFromDate(ctx.now)), 'datetime')),
  today: fn(0, 0, (_args, ctx) => literalInstant(ctx.dialect, ctx.now.toISOString().slice(0, 10), 'date')),
  todatetime: fn(1, 1, ([a], ctx) => datetimeOf(a as Typed, ctx)),
  todate: fn(1, 1, ([a], ctx) => asDate(ctx.dialect, a as Typed, ctx.site)),
  tostartofminute: startOf('minute', 'datetime'),
  tostartofhour: startOf('hour', 'datetime'),
  tostartofday: startOf('day', 'datetime'),
  // ClickHouse's default week (mode 0): starting on Sunday.
  tostartofweek: startOf('week', 'date'),
  tostartofmonth: startOf('month', 'date'),
  tostartofyear: startOf('year', 'date'),

  tostring: fn(1, 1, ([a], ctx) => asString(ctx.dialect, a as Typed)),
  toint: unary((a, ctx) => ctx.dialect.tryInteger(scalar(a, ctx), a.type), 'integer', { nullable: true }),
  tofloat: unary((a, ctx) => ctx.dialect.tryFloat(scalar(a, ctx), a.type), 'float', { nullable: true }),
  lower: unary((a, ctx) => ctx.dialect.lower(asString(ctx.dialect, a)), 'string'),
  upper: unary((a, ctx) => ctx.dialect.upper(asString(ctx.dialect, a)), 'string'),
  length: unary((a, ctx) => ctx.dialect.length(asString(ctx.dialect, a)), 'integer'),
  match: fn(2, 2, ([subject, pattern], ctx) => compileMatch(subject as Typed, pattern as Typed, ctx)),
  coalesce: fn(1, 100, (args, ctx) => compileCoalesce(args, ctx)),
  ifnull: fn(2, 2, (args, ctx) => compileCoalesce(args, ctx)),
};

/** The first non-NULL argument, the arguments brought to one type as comparisons bring them. */
function compileCoalesce(args: Typed[], ctx: CallContext): Typed {
  const values = unify(ctx.dialect, args, ctx.site);
  const type = values.find((t) => t.type !== 'null')?.type ?? 'null';
  return derive(sql`coalesce(${joinSql(values, ', ')})`, type, values, { nullable: values.every((t) => t.nullable) });
}

/** HogQL `match(x, 'regex')`; the pattern must be a literal so RE2 can be checked before running. */
function compileMatch(subject: Typed, pattern: Typed, ctx: CallContext): Typed {
  if (typeof pattern.literal !== 'string') return fail(ctx.site, 'match() needs a string literal as its pattern');
  const problem = checkRe2Syntax(pattern.literal);
  if (problem) return fail(ctx.site, `Invalid regular expression (${problem})`);
  return derive(ctx.dialect.regexMatch(asString(ctx.dialect, subject), pattern.literal), 'boolean', [subject], { nullable: subject.nullable });
}

export function lookupFunction(name: string, site: Site): FunctionDef {
  const key = name.toLowerCase();
  if (!Object.prototype.hasOwnProperty.call(FUNCTIONS, key)) return fail(site, `Unknown function '${name.slice(0, 100)}'`);
  return FUNCTIONS[key] as FunctionDef;
}

export const FUNCTION_NAMES = Object.keys(FUNCTIONS);

/** ClickHouse-style names for the `types` of a select response. */
export function clickhouseType(t: Typed): string {
  const names: Record<ValueType, string> = {
    string: 'String', json: 'String', integer: 'Int64', float: 'Float64', boolean: 'UInt8',
    datetime: "DateTime64(6, 'UTC')", date: 'Date', interval: 'IntervalSecond', null: 'Nullable(Nothing)',
  };
  if (t.type === 'integer' && !t.nullable && t.aggregate) return 'UInt64';
  const name = names[t.type];
  return t.nullable && t.type !== 'null' ? `Nullable(${name})` : name;
}
