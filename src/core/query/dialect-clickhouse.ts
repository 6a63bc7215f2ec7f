import type { CompareOp, IntervalUnit } from './ast';
import { parseIsoInstant } from './dates';
import type { Dialect, RenderedSql } from './dialect';
import { joinSql, sql, trusted, type QueryParam, type SqlFragment } from './sql';
import type { ValueType } from './types';

/**
 * What separates ClickHouse 18.16 (the Debian server) from a modern one: the three version
 * switches of the reference (scale-out.md) for what statements are written with, and whether a
 * mutation can be waited for by a setting (storage's business, not this dialect's). Everything
 * else this dialect writes is in the subset both run (no `true`/`false`, ILIKE, toStartOfWeek,
 * CTEs or window functions).
 */
export interface ClickHouseFeatures {
  /** DateTime64(6) timestamps; without it, DateTime and whole seconds (storage keeps the microseconds apart). */
  datetime64: boolean;
  /** JSONExtract… and JSONHas; without them, visitParam* (the first occurrence of a key at any depth). */
  jsonExtract: boolean;
  /** Server-side typed `{p0:String}` parameters; without them, values are rendered as escaped literals. */
  queryParams: boolean;
  /**
   * `SETTINGS mutations_sync = 1` on `ALTER … DELETE` (the statement answers once the mutation is
   * applied, or fails with its reason); without it (18.16 refuses the clause) storage polls
   * `system.mutations`.
   */
  mutationsSync: boolean;
}

/**
 * The switches for a server's `SELECT version()`. DateTime64 came in 20.1; JSONExtract and query
 * parameters (and mutations_sync) a little earlier (19.x), but below 20.1 the 18.16 forms are taken for all: they
 * also run on the versions in between, so a wrong guess there costs speed, never an error.
 */
export function clickhouseFeatures(version: string): ClickHouseFeatures {
  const [major = 0, minor = 0] = version.split('.').map((n) => Number.parseInt(n, 10) || 0);
  const modern = major > 20 || (major === 20 && minor >= 1);
  return { datetime64: modern, jsonExtract: modern, queryParams: modern, mutationsSync: modern };
}

type ParamType = 'String' | 'Int64' | 'Float64' | 'UInt8';

/** A bound value in fragment text: `{?:Type}`, numbered `{p0:Type}` (or written as a literal) by `render`. */
const MARKER = /\{\?:(String|Int64|Float64|UInt8)\}/g;

function paramType(value: QueryParam): ParamType {
  if (typeof value === 'string') return 'String';
  if (typeof value === 'boolean') return 'UInt8';
  if (!Number.isFinite(value)) throw new RangeError('non-finite numbers are never bound');
  return Number.isSafeInteger(value) ? 'Int64' : 'Float64';
}

/**
 * A value as a ClickHouse literal, for servers without query parameters. Inside quotes ClickHouse
 * reads backslash escapes, so backslash and quote are escaped, and control characters written as
 * escapes so no raw byte of a value changes how the statement is read.
 */
export function clickhouseLiteral(value: QueryParam): string {
  if (typeof value === 'boolean') return value ? '1' : '0';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError('non-finite numbers are never bound');
    // Parenthesized when negative, so `x - -1` never reads as a comment or another operator.
    return value < 0 || Object.is(value, -0) ? `(${value})` : String(value);
  }
  const escaped = value.replace(/[\\'\0\n\r\t\b\f]/g, (c) => ESCAPES[c] as string);
  return `'${escaped}'`;
}

const ESCAPES: Record<string, string> = { '\\': '\\\\', "'": "\\'", '\0': '\\0', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };

function render(statement: SqlFragment, queryParams: boolean): RenderedSql {
  let i = 0;
  const named: Record<string, QueryParam> = {};
  const text = statement.sql.replace(MARKER, (_m, type: ParamType) => {
    const value = statement.params[i];
    if (value === undefined || paramType(value) !== type) throw new Error('placeholders and params disagree');
    const name = `p${i++}`;
    // A float travels as its shortest round-trip text: the client refuses numbers beyond 2^53.
    named[name] = typeof value === 'boolean' ? Number(value) : type === 'Float64' ? String(value) : value;
    return queryParams ? `{${name}:${type}}` : clickhouseLiteral(value);
  });
  if (i !== statement.params.length) throw new Error('placeholders and params disagree');
  return { sql: text, params: queryParams ? named : {} };
}

const INTERVALS: Record<IntervalUnit, [string, number]> = {
  second: ['toIntervalSecond', 1], minute: ['toIntervalMinute', 1], hour: ['toIntervalHour', 1], day: ['toIntervalDay', 1],
  week: ['toIntervalWeek', 1], month: ['toIntervalMonth', 1], quarter: ['toIntervalMonth', 3], year: ['toIntervalYear', 1],
};

const START_OF = { minute: 'toStartOfMinute', hour: 'toStartOfHour', day: 'toStartOfDay', month: 'toStartOfMonth', year: 'toStartOfYear' } as const;

export function clickhouseDialect(features: ClickHouseFeatures): Dialect {
  const bind = (value: QueryParam): SqlFragment => ({ sql: `{?:${paramType(value)}}`, params: [value] });
  const call = (name: string, ...args: SqlFragment[]) => sql`${trusted(name)}(${joinSql(args, ', ')})`;
  const json = jsonFunctions(features.jsonExtract, bind, call);
  const { datetime64 } = features;
  // Best effort reads far more than DuckDB's TIMESTAMPTZ cast (18.16 takes '10' for a time), so only
  // text that starts as a date is parsed; other text is parsed as 'x', which is NULL (`if(…, NULL)`
  // trips 18.16 over nested Nullables, and 18.16 reads '' as 2000-01-01).
  const tryDatetime = (x: SqlFragment) => {
    const dateLike = sql`if(match(${x}, '^\\\\d{4}-\\\\d{1,2}-\\\\d{1,2}'), ${x}, 'x')`;
    return datetime64 ? sql`parseDateTime64BestEffortOrNull(${dateLike}, 6, 'UTC')` : sql`parseDateTimeBestEffortOrNull(${dateLike}, 'UTC')`;
  };

  return {
    name: 'clickhouse',
    bind,
    render: (statement) => render(statement, features.queryParams),
    true: '1',
    false: '0',
    quoteIdentifier: (name) => `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``,

    jsonText: json.text,
    jsonHas: json.has,

    // 18.16 fails the query on a float `% 0`; written out, it is NaN as in DuckDB, on every version.
    modulo: (l, r) => sql`(${l} - ${r} * trunc(${l} / ${r}))`,
    toFloat: (x) => call('toFloat64', x),
    tryFloat: (x, from) => (isTextual(from) ? call('toFloat64OrNull', x) : call('toFloat64', x)),
    tryInteger: (x, from) => tryInteger(x, from, call),
    toText: (x, from) => (from === 'boolean' ? sql`multiIf(isNull(${x}), NULL, ${x}, 'true', 'false')` : call('toString', x)),
    tryDatetime,
    toDate: (x) => call('toDate', x),
    // 18.16 compares a Date with a DateTime as raw numbers (days against seconds).
    dateAsDatetime: (x) => (datetime64 ? sql`toDateTime64(${x}, 6, 'UTC')` : sql`toDateTime(${x}, 'UTC')`),
    instant: (text, type) => {
      if (type === 'date') return call('toDate', bind(text));
      // 18.16 parses no fractional seconds: its DateTime holds whole seconds anyway.
      return datetime64 ? sql`toDateTime64(${bind(text)}, 6, 'UTC')` : sql`toDateTime(${bind(secondsText(text))}, 'UTC')`;
    },
    ...(datetime64 ? {} : { compareEventTime: (op: CompareOp, time: SqlFragment, text: string) => wholeSecondsCompare(op, time, text, bind) }),
    isoInstant: (iso) => (datetime64 ? sql`parseDateTime64BestEffort(${bind(iso)}, 6, 'UTC')` : sql`parseDateTimeBestEffort(${bind(iso)}, 'UTC')`),
    personDate: (t) => {
      const epoch = datetime64 ? sql`toDateTime64(toFloat64OrNull(${t}), 6, 'UTC')` : sql`toDateTime(toFloat64OrNull(${t}), 'UTC')`;
      const parsed = tryDatetime(t);
      // In a ClickHouse string literal a backslash escapes: `\\d` is the regex `\d`.
      return sql`multiIf(match(${t}, '^[+-]?(\\\\d+\\\\.?\\\\d*|\\\\.\\\\d+)([eE][+-]?\\\\d+)?$'), ${epoch}, ${parsed})`;
    },

    // toStartOfWeek is not on 18.16: the Sunday on or before a day is the Monday after it, less a week's last day.
    startOf: (unit, x) => (unit === 'week' ? sql`subtractDays(toMonday(addDays(${x}, 1)), 1)` : call(START_OF[unit], x)),
    interval: (amount, unit) => {
      const [name, multiplier] = INTERVALS[unit];
      return call(name, bind(amount * multiplier));
    },

    lower: (x) => call('lowerUTF8', x),
    upper: (x) => call('upperUTF8', x),
    length: (x) => call('lengthUTF8', x),
    // ClickHouse's LIKE escapes with a backslash already (no ESCAPE clause); ILIKE is not on 18.16.
    like: (x, pattern, negated, caseInsensitive) => {
      const op = trusted(negated ? 'NOT LIKE' : 'LIKE');
      return caseInsensitive ? sql`lowerUTF8(${x}) ${op} lowerUTF8(${pattern})` : sql`${x} ${op} ${pattern}`;
    },
    regexMatch: (x, pattern) => call('match', x, bind(scopedFlags(pattern))),
    contains: (haystack, needle) => sql`position(${haystack}, ${needle}) > 0`,

    // 18.16 takes only constants in an IN list; with a field among them, the ORs mean the same.
    inList: (x, items, negated, constant) => {
      // A NULL literal's IN is NULL anyway, and 18.16 refuses its type (Nothing) against the list.
      if (x.sql === 'NULL') return trusted('NULL');
      if (constant) return sql`${x} ${trusted(negated ? 'NOT IN' : 'IN')} (${joinSql(items, ', ')})`;
      const any = joinSql(items.map((item) => sql`${x} = (${item})`), ' OR ');
      return negated ? sql`NOT (${any})` : sql`(${any})`;
    },
    // IS [NOT] DISTINCT FROM exists only in JOIN ON.
    notDistinct: (l, r) => sql`coalesce(${l} = ${r}, isNull(${l}) AND isNull(${r}))`,
    distinct: (l, r) => sql`NOT coalesce(${l} = ${r}, isNull(${l}) AND isNull(${r}))`,
    nullAs: (pred, value) => sql`coalesce(${pred}, ${trusted(value ? '1' : '0')})`,
    orFalse: (pred) => sql`coalesce(${pred}, 0)`,

    aggregate: (name, x) => {
      if (!x) return trusted('count(*)');
      if (name === 'count') return call('count', x);
      if (name === 'uniq') return sql`count(DISTINCT ${x})`;
      // ClickHouse gives 0 (or the type's default) where SQL gives NULL: no values, or only NULLs.
      return sql`if(count(${x}) = 0, NULL, ${call(name, x)})`;
    },
  };
}

/**
 * The times ClickHouse's time columns hold (epoch ms): 18.16's `DateTime` is unsigned seconds whose
 * calendar ends with 2105 (and whose 0 reads back as the zero date `0000-00-00`); a modern
 * `DateTime64` spans 1900–2299. Capture takes years 100–9999 (as DuckDB stores them); outside its
 * column's range a server stores or compares another time without an error (1950 read back as
 * 1970 with the day's clock time), so event times and bounds are taken to the nearest bound.
 */
export const CLICKHOUSE_TIME_RANGE_MS = {
  datetime: [1_000, Date.UTC(2105, 11, 31, 23, 59, 59, 999)],
  datetime64: [Date.UTC(1900, 0, 1), Date.UTC(2299, 11, 31, 23, 59, 59, 999)],
} as const;

/** `ms` within the range of the server's time column (`clickhouseFeatures`' `datetime64`). */
export function clampClickHouseTime(ms: number, datetime64: boolean): number {
  const [lo, hi] = CLICKHOUSE_TIME_RANGE_MS[datetime64 ? 'datetime64' : 'datetime'];
  return Math.min(hi, Math.max(lo, ms));
}

/** An instant's `YYYY-MM-DD hh:mm:ss` for 18.16's `DateTime`, the nearest bound of its range when outside it. */
function secondsText(text: string): string {
  const at = parseIsoInstant(text);
  const ms = at ? clampClickHouseTime(at.ms, false) : null;
  if (ms === null || ms === at!.ms) return text.slice(0, 19);
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

/**
 * The event time against an instant where DateTime is whole seconds (18.16): the milliseconds are
 * in `<column>_ms` beside it (storage's events table), and an instant may have microseconds.
 * Events have whole milliseconds m, so for an instant b: m < b ⟺ m < ceil(b), m > b ⟺ m > floor(b),
 * and m = b only when b is a whole millisecond. The seconds column is bounded first (a superset:
 * the instant's own second, inclusive) so the primary key still prunes.
 */
function wholeSecondsCompare(op: CompareOp, time: SqlFragment, text: string, bind: (v: QueryParam) => SqlFragment): SqlFragment {
  const at = parseIsoInstant(text);
  if (!at || time.params.length > 0 || !/^\w+$/.test(time.sql)) throw new Error('an event time comparison needs a column and an instant');
  const floor = at.ms;
  const ceil = at.us > 0 ? at.ms + 1 : at.ms;
  const second = sql`toDateTime(${bind(secondsText(text))}, 'UTC')`;
  const exact = sql`(toInt64(toUnixTimestamp(${time})) * 1000 + ${trusted(`${time.sql}_ms`)})`;
  switch (op) {
    case '<':
      return sql`(${time} <= ${second} AND ${exact} < ${bind(ceil)})`;
    case '<=':
      return sql`(${time} <= ${second} AND ${exact} <= ${bind(floor)})`;
    case '>':
      return sql`(${time} >= ${second} AND ${exact} > ${bind(floor)})`;
    case '>=':
      return sql`(${time} >= ${second} AND ${exact} >= ${bind(ceil)})`;
    case '=':
      return at.us > 0 ? trusted('0') : sql`(${time} = ${second} AND ${exact} = ${bind(floor)})`;
    case '!=':
      return at.us > 0 ? trusted('1') : sql`(${time} != ${second} OR ${exact} != ${bind(floor)})`;
  }
}

/**
 * RE2 reads a leading `(?i)` as flags for the rest of the pattern; 18.16's match() does not (it
 * never matches). `(?i:…)` means the same to RE2 and works on every version.
 */
const scopedFlags = (pattern: string): string => pattern.replace(/^\(\?([imsU]+)\)([\s\S]*)$/, '(?$1:$2)');

const isTextual = (t: ValueType) => t === 'string' || t === 'json' || t === 'null';

/** DuckDB's TRY_CAST to BIGINT: text read as a number, floats rounded half to even, NULL when out of range. */
function tryInteger(x: SqlFragment, from: ValueType, call: (name: string, ...args: SqlFragment[]) => SqlFragment): SqlFragment {
  if (from === 'integer') return x;
  if (from === 'boolean') return call('toInt64', x);
  const float = isTextual(from) ? call('toFloat64OrNull', x) : x;
  // Through text, so NaN, infinities and values beyond Int64 become NULL instead of wrapping.
  return call('toInt64OrNull', call('toString', call('round', float)));
}

/**
 * JSON reads. JSONExtract* take the keys as separate arguments (a key is never a path); visitParam*
 * find the first `"key":` anywhere in the text, so a nested key is read from the raw value of its parent.
 */
function jsonFunctions(
  jsonExtract: boolean,
  bind: (v: QueryParam) => SqlFragment,
  call: (name: string, ...args: SqlFragment[]) => SqlFragment,
) {
  if (jsonExtract) {
    const args = (json: SqlFragment, keys: readonly string[]) => [json, ...keys.map(bind)];
    return {
      // JSONExtractString gives '' for a number; JSONType says 'Null' for null and for absent keys.
      text: (json: SqlFragment, keys: readonly string[]) =>
        sql`multiIf(${call('JSONType', ...args(json, keys))} = 'String', ${call('JSONExtractString', ...args(json, keys))}, ${call('JSONType', ...args(json, keys))} = 'Null', NULL, ${call('JSONExtractRaw', ...args(json, keys))})`,
      has: (json: SqlFragment, keys: readonly string[]) => call('JSONHas', ...args(json, keys)),
    };
  }
  // visitParam* look for `"<name>":` in the text itself, so the name is given as JSON writes it.
  const name = (key: string) => bind(JSON.stringify(key).slice(1, -1));
  const parent = (json: SqlFragment, keys: readonly string[]) => keys.slice(0, -1).reduce((j, k) => call('visitParamExtractRaw', j, name(k)), json);
  const last = (keys: readonly string[]) => name(keys[keys.length - 1] as string);
  return {
    text: (json: SqlFragment, keys: readonly string[]) => {
      const raw = () => call('visitParamExtractRaw', parent(json, keys), last(keys));
      // The raw text is as stored (JSON.stringify's `1e+21`); DuckDB and JSONExtractRaw write a
      // number anew, as `1e21` (over the whole double range the exponent's `+` is the only difference).
      return sql`multiIf(${raw()} IN ('', 'null'), NULL, substring(${raw()}, 1, 1) = '"', ${call('visitParamExtractString', parent(json, keys), last(keys))}, match(${raw()}, '^-?[0-9]'), replaceOne(${raw()}, 'e+', 'e'), ${raw()})`;
    },
    has: (json: SqlFragment, keys: readonly string[]) => call('visitParamHas', parent(json, keys), last(keys)),
  };
}

/** Modern ClickHouse (chDB, 20.1 and later servers). */
export const CLICKHOUSE: Dialect = clickhouseDialect({ datetime64: true, jsonExtract: true, queryParams: true, mutationsSync: true });
/** ClickHouse 18.16 (Debian's server). */
export const CLICKHOUSE_18: Dialect = clickhouseDialect({ datetime64: false, jsonExtract: false, queryParams: false, mutationsSync: false });
