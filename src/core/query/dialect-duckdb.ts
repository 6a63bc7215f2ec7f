import type { Dialect } from './dialect';
import { bind, joinSql, sql, trusted, type SqlFragment } from './sql';

/** RFC 6901 pointer; DuckDB reads a `$…` path as JSONPath, so `$browser` must never be one. */
export const jsonPointer = (keys: readonly string[]): string =>
  `/${keys.map((k) => k.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;

const UNIT_FUNCTIONS = {
  second: ['to_seconds', 1], minute: ['to_minutes', 1], hour: ['to_hours', 1], day: ['to_days', 1],
  week: ['to_weeks', 1], month: ['to_months', 1], quarter: ['to_months', 3], year: ['to_years', 1],
} as const;

/**
 * DuckDB, the embedded engine: positional `?` placeholders, JSON read through bound JSON-pointer
 * paths, TRY_CAST for casts that may fail. Timestamps are TIMESTAMP in UTC (storage sets the
 * connection's TimeZone to UTC, which the TIMESTAMPTZ round trips rely on).
 */
export const DUCKDB: Dialect = {
  name: 'duckdb',
  bind,
  render: (s) => ({ sql: s.sql, params: [...s.params] }),
  true: 'TRUE',
  false: 'FALSE',
  quoteIdentifier: (name) => `"${name.replace(/"/g, '""')}"`,

  jsonText: (json, keys) => sql`json_extract_string(${json}, ${bind(jsonPointer(keys))})`,
  jsonHas: (json, keys) => sql`json_exists(${json}, ${bind(jsonPointer(keys))})`,

  modulo: (l, r) => sql`${l} % ${r}`,
  toFloat: (x) => sql`CAST(${x} AS DOUBLE)`,
  tryFloat: (x) => sql`TRY_CAST(${x} AS DOUBLE)`,
  tryInteger: (x) => sql`TRY_CAST(${x} AS BIGINT)`,
  toText: (x) => sql`CAST(${x} AS VARCHAR)`,
  tryDatetime: (x) => sql`CAST(TRY_CAST(${x} AS TIMESTAMPTZ) AS TIMESTAMP)`,
  toDate: (x) => sql`CAST(${x} AS DATE)`,
  // DuckDB compares a DATE with a TIMESTAMP as the day's midnight already.
  dateAsDatetime: (x) => x,
  instant: (text, type) => (type === 'date' ? sql`CAST(${bind(text)} AS DATE)` : sql`CAST(${bind(text)} AS TIMESTAMP)`),
  isoInstant: (iso, zoned) => (zoned ? sql`CAST(${bind(iso)} AS TIMESTAMPTZ)` : sql`CAST(${bind(iso)} AS TIMESTAMP)`),
  personDate: (t) =>
    joinSql([
      sql`CASE WHEN regexp_full_match(${t}, '[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?') THEN to_timestamp(TRY_CAST(${t} AS DOUBLE))`,
      sql` WHEN regexp_matches(${t}, '\\d[T ]\\d\\d:\\d\\d.*([Zz]|[+-]\\d\\d:?\\d\\d)$') THEN TRY_CAST(${t} AS TIMESTAMPTZ)`,
      sql` ELSE timezone('UTC', TRY_CAST(${t} AS TIMESTAMP)) END`,
    ], ''),

  startOf: (unit, x) => {
    // ClickHouse's default week (mode 0) starts on Sunday; DuckDB's ISO week on Monday.
    if (unit === 'week') return sql`CAST(date_trunc('week', ${x} + INTERVAL 1 DAY) - INTERVAL 1 DAY AS DATE)`;
    const truncated = sql`date_trunc(${trusted(`'${unit}'`)}, ${x})`;
    return unit === 'month' || unit === 'year' ? sql`CAST(${truncated} AS DATE)` : truncated;
  },
  interval: (amount, unit) => {
    const [fn, multiplier] = UNIT_FUNCTIONS[unit];
    return sql`${trusted(fn)}(${bind(amount * multiplier)})`;
  },

  lower: (x) => sql`lower(${x})`,
  upper: (x) => sql`upper(${x})`,
  length: (x) => sql`length(${x})`,
  like: (x, pattern, negated, caseInsensitive) =>
    sql`${x} ${trusted(`${negated ? 'NOT ' : ''}${caseInsensitive ? 'ILIKE' : 'LIKE'}`)} ${pattern} ESCAPE '\\'`,
  regexMatch: (x, pattern) => sql`regexp_matches(${x}, ${bind(pattern)})`,
  contains: (haystack, needle) => sql`strpos(${haystack}, ${needle}) > 0`,

  inList: (x, items, negated) => sql`${x} ${trusted(negated ? 'NOT IN' : 'IN')} (${joinSql(items, ', ')})`,
  notDistinct: (l, r) => sql`${l} IS NOT DISTINCT FROM ${r}`,
  distinct: (l, r) => sql`${l} IS DISTINCT FROM ${r}`,
  nullAs: (pred, value) => sql`COALESCE(${pred}, ${trusted(value ? 'TRUE' : 'FALSE')})`,
  orFalse: (pred) => sql`coalesce(${pred}, false)`,

  aggregate: (name, x) => aggregate(name, x),
};

function aggregate(name: Parameters<Dialect['aggregate']>[0], x: SqlFragment | null): SqlFragment {
  if (!x) return trusted('count(*)');
  if (name === 'uniq') return sql`count(DISTINCT ${x})`;
  return sql`${trusted(name)}(${x})`;
}
