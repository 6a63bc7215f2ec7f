import { hotColumnFor } from '../events/columns';
import { checkRe2Syntax } from './regex';
import { bind, sql, trusted, type SqlFragment } from './sql';
import {
  asDate, asDatetime, asDouble, asString, derive, fail, isTemporal, literalInstant, PREC, TYPE_NAMES,
  type Site, type Typed, type ValueType,
} from './types';
import { formatInstant, instantFromDate } from './dates';

/**
 * The whitelist. A request can name only the fields and functions listed here; the SQL text each
 * one compiles to is written here, and request values reach it only as bound parameters. DuckDB's
 * table and file functions (read_csv, glob, query, …), settings and `team_id` are not listed, so
 * they are unreachable: naming them is a 400.
 */

type Column = { sql: string; type: ValueType; nullable: boolean };

const COLUMNS: Record<string, Column> = {
  uuid: { sql: 'uuid', type: 'string', nullable: false },
  event: { sql: 'event', type: 'string', nullable: false },
  distinct_id: { sql: 'distinct_id', type: 'string', nullable: false },
  person_id: { sql: 'person_id', type: 'string', nullable: true },
  timestamp: { sql: 'timestamp', type: 'datetime', nullable: false },
  created_at: { sql: 'created_at', type: 'datetime', nullable: false },
  elements_chain: { sql: 'elements_chain', type: 'string', nullable: false },
};

export const COLUMN_NAMES = Object.keys(COLUMNS);

const column = (sqlText: string, type: ValueType, nullable: boolean): Typed => ({
  ...trusted(sqlText), type, nullable, prec: PREC.atom, aggregate: false, columns: true,
});

/** RFC 6901 pointer; DuckDB reads a `$…` path as JSONPath, so `$browser` must never be one. */
export const jsonPointer = (keys: readonly string[]): string =>
  `/${keys.map((k) => k.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

/** A property of the event (`properties`) or of its person (`person_properties`, joined by storage). */
export function propertyAccess(source: 'properties' | 'person_properties', keys: readonly string[]): Typed {
  const hot = source === 'properties' && keys.length === 1 ? hotColumnFor(keys[0] as string) : undefined;
  if (hot) return column(hot, 'string', true);
  return { ...column('', 'string', true), ...sql`json_extract_string(${trusted(source)}, ${bind(jsonPointer(keys))})` };
}

/** `event`, `properties.$browser`, `properties.a.b`, `person.properties.email`, `person.id`, … */
export function resolveField(chain: readonly string[], site: Site): Typed {
  const [head, ...rest] = chain as [string, ...string[]];
  if (rest.length === 0 && Object.prototype.hasOwnProperty.call(COLUMNS, head)) {
    const c = COLUMNS[head] as Column;
    return column(c.sql, c.type, c.nullable);
  }
  if (head === 'properties') return rest.length ? propertyAccess('properties', rest) : column('properties', 'json', false);
  if (head === 'person' && rest[0] === 'properties') {
    return rest.length > 1 ? propertyAccess('person_properties', rest.slice(1)) : column('person_properties', 'json', true);
  }
  if (head === 'person' && rest[0] === 'id' && rest.length === 1) return column('person_id', 'string', true);
  return fail(site, `Unknown field '${chain.join('.').slice(0, 100)}'`);
}

export interface CallContext {
  site: Site;
  now: Date;
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

const datetimeOf = (t: Typed, ctx: CallContext) => asDatetime(t, ctx.site);

/** TRY_CAST hides bad values, not impossible casts: TIMESTAMP to BIGINT would fail the query. */
const scalar = (t: Typed, ctx: CallContext): Typed =>
  isTemporal(t) || t.type === 'interval' ? fail(ctx.site, `Expected a number or text, got ${TYPE_NAMES[t.type]}`) : t;

/** Keys are lower case; lookup is case-insensitive (`COUNT()` works as in ClickHouse). */
const FUNCTIONS: Record<string, FunctionDef> = {
  count: agg((args) => derive(args.length ? sql`count(${args[0] as Typed})` : trusted('count(*)'), 'integer', args, { nullable: false }), 0, 1, { star: true }),
  uniq: agg((args) => derive(sql`count(DISTINCT ${args[0] as Typed})`, 'integer', args, { nullable: false })),
  sum: agg((args, ctx) => derive(sql`sum(${asDouble(args[0] as Typed, ctx.site)})`, 'float', args, { nullable: true })),
  avg: agg((args, ctx) => derive(sql`avg(${asDouble(args[0] as Typed, ctx.site)})`, 'float', args, { nullable: true })),
  min: agg(([a]) => derive(sql`min(${a as Typed})`, (a as Typed).type, [a as Typed], { nullable: true })),
  max: agg(([a]) => derive(sql`max(${a as Typed})`, (a as Typed).type, [a as Typed], { nullable: true })),

  now: fn(0, 0, (_args, ctx) => literalInstant(formatInstant(instantFromDate(ctx.now)), 'datetime')),
  today: fn(0, 0, (_args, ctx) => literalInstant(ctx.now.toISOString().slice(0, 10), 'date')),
  todatetime: fn(1, 1, ([a], ctx) => datetimeOf(a as Typed, ctx)),
  todate: fn(1, 1, ([a], ctx) => asDate(a as Typed, ctx.site)),
  tostartofminute: unary((a, ctx) => sql`date_trunc('minute', ${datetimeOf(a, ctx)})`, 'datetime'),
  tostartofhour: unary((a, ctx) => sql`date_trunc('hour', ${datetimeOf(a, ctx)})`, 'datetime'),
  tostartofday: unary((a, ctx) => sql`date_trunc('day', ${datetimeOf(a, ctx)})`, 'datetime'),
  // ClickHouse's default week (mode 0) starts on Sunday; DuckDB's ISO week on Monday.
  tostartofweek: unary((a, ctx) => sql`CAST(date_trunc('week', ${datetimeOf(a, ctx)} + INTERVAL 1 DAY) - INTERVAL 1 DAY AS DATE)`, 'date'),
  tostartofmonth: unary((a, ctx) => sql`CAST(date_trunc('month', ${datetimeOf(a, ctx)}) AS DATE)`, 'date'),
  tostartofyear: unary((a, ctx) => sql`CAST(date_trunc('year', ${datetimeOf(a, ctx)}) AS DATE)`, 'date'),

  tostring: fn(1, 1, ([a]) => asString(a as Typed)),
  toint: unary((a, ctx) => sql`TRY_CAST(${scalar(a, ctx)} AS BIGINT)`, 'integer', { nullable: true }),
  tofloat: unary((a, ctx) => sql`TRY_CAST(${scalar(a, ctx)} AS DOUBLE)`, 'float', { nullable: true }),
  lower: unary((a) => sql`lower(${asString(a)})`, 'string'),
  upper: unary((a) => sql`upper(${asString(a)})`, 'string'),
  length: unary((a) => sql`length(${asString(a)})`, 'integer'),
  match: fn(2, 2, ([subject, pattern], ctx) => compileMatch(subject as Typed, pattern as Typed, ctx)),
};

/** HogQL `match(x, 'regex')`; the pattern must be a literal so RE2 can be checked before running. */
function compileMatch(subject: Typed, pattern: Typed, ctx: CallContext): Typed {
  if (typeof pattern.literal !== 'string') return fail(ctx.site, 'match() needs a string literal as its pattern');
  const problem = checkRe2Syntax(pattern.literal);
  if (problem) return fail(ctx.site, `Invalid regular expression (${problem})`);
  return derive(sql`regexp_matches(${asString(subject)}, ${pattern})`, 'boolean', [subject], { nullable: subject.nullable });
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
