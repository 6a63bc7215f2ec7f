import type { CompareOp, IntervalUnit } from './ast';
import type { QueryParam, SqlFragment } from './sql';
import type { ValueType } from './types';

/**
 * Every spelling that differs between the engines the compilers write for. The compilers (the
 * expression compiler and its catalog, the events filters, the HogQL statement compiler, the cohort
 * property compiler) decide what to compute; a dialect decides how the engine writes it. Operands
 * arrive compiled and parenthesized as the caller's precedence needs, and every method returns a
 * fragment whose request-derived values are bound, never written into the text.
 *
 * Two dialects: DuckDB (the embedded default; its output is the SQL the compilers always wrote) and
 * ClickHouse (modern, with the three switches ClickHouse 18.16 needs: see dialect-clickhouse.ts).
 */
export interface Dialect {
  readonly name: 'duckdb' | 'clickhouse';
  /** A bound value: a placeholder in the text and the value in `params`. */
  bind(value: QueryParam): SqlFragment;
  /**
   * The finished statement as the engine's client takes it: DuckDB's positional `?` and a list;
   * ClickHouse's typed `{p0:String}` and a map, or escaped literals where the server predates
   * query parameters.
   */
  render(statement: SqlFragment): RenderedSql;
  /** Boolean literals as trusted text. */
  readonly true: string;
  readonly false: string;
  quoteIdentifier(name: string): string;

  /** A JSON value as text, as DuckDB's json_extract_string reads it: a string itself, another value its JSON text, absent or null NULL. */
  jsonText(json: SqlFragment, keys: readonly string[]): SqlFragment;
  /** Whether the key path is present (a JSON null counts as present). */
  jsonHas(json: SqlFragment, keys: readonly string[]): SqlFragment;

  /** The float remainder with the dividend's sign (fmod); by zero NaN, never an error. Operands parenthesized for `%`. */
  modulo(l: SqlFragment, r: SqlFragment): SqlFragment;
  /** An integer or boolean as a float (never fails). */
  toFloat(x: SqlFragment): SqlFragment;
  /** Any scalar of type `from` as a float; text that is no number gives NULL. */
  tryFloat(x: SqlFragment, from: ValueType): SqlFragment;
  /** Any scalar of type `from` as an integer, or NULL where it is none. */
  tryInteger(x: SqlFragment, from: ValueType): SqlFragment;
  /** A non-text value of type `from` as text. */
  toText(x: SqlFragment, from: ValueType): SqlFragment;
  /** Text as a UTC DateTime (an offset in it honoured); unparsable text gives NULL. */
  tryDatetime(x: SqlFragment): SqlFragment;
  /** A DateTime's day. */
  toDate(x: SqlFragment): SqlFragment;
  /** A Date as the DateTime of its midnight, where it meets DateTimes (a comparison, coalesce). */
  dateAsDatetime(x: SqlFragment): SqlFragment;
  /** A literal UTC instant (`YYYY-MM-DD HH:MM:SS.ffffff`) or day (`YYYY-MM-DD`), bound. */
  instant(text: string, type: 'datetime' | 'date'): SqlFragment;
  /**
   * `time op instant` for the events' time column where that column alone is not the exact time
   * (ClickHouse 18.16: whole seconds, the milliseconds beside it); absent where the plain
   * comparison is exact. `instant` is as `instant` takes it.
   */
  compareEventTime?(op: CompareOp, time: SqlFragment, instant: string): SqlFragment;
  /** A JS ISO instant (`toISOString()`) as a DateTime (`zoned`: with its zone, as cohorts compare person dates). */
  isoInstant(iso: string, zoned: boolean): SqlFragment;
  /** A person property's date, as cohorts read it: epoch seconds, ISO text with an offset, or naive text taken as UTC. */
  personDate(text: SqlFragment): SqlFragment;

  /** The start of the minute/hour/day (a DateTime), of the week (a Sunday) or month or year (a Date). */
  startOf(unit: 'minute' | 'hour' | 'day' | 'week' | 'month' | 'year', x: SqlFragment): SqlFragment;
  /** `amount` units as an interval; an interval added to a DateTime keeps it a DateTime. */
  interval(amount: number, unit: IntervalUnit): SqlFragment;

  lower(x: SqlFragment): SqlFragment;
  upper(x: SqlFragment): SqlFragment;
  /** Length in characters (not bytes). */
  length(x: SqlFragment): SqlFragment;
  /** `x [NOT] [I]LIKE pattern` where a backslash escapes `%`, `_` and itself. */
  like(x: SqlFragment, pattern: SqlFragment, negated: boolean, caseInsensitive: boolean): SqlFragment;
  /** RE2 partial match of a pattern the compiler has checked (bound). */
  regexMatch(x: SqlFragment, pattern: string): SqlFragment;
  /** Whether `needle` occurs in `haystack`. */
  contains(haystack: SqlFragment, needle: SqlFragment): SqlFragment;

  /** `x [NOT] IN (items)`, NULL as SQL has it; `constant` when no item reads a column. */
  inList(x: SqlFragment, items: SqlFragment[], negated: boolean, constant: boolean): SqlFragment;
  /** `l = r` where NULL equals NULL; never NULL itself. */
  notDistinct(l: SqlFragment, r: SqlFragment): SqlFragment;
  /** `l != r` where NULL equals NULL; never NULL itself. */
  distinct(l: SqlFragment, r: SqlFragment): SqlFragment;
  /** A predicate with NULL read as `value`. */
  nullAs(pred: SqlFragment, value: boolean): SqlFragment;
  /** A predicate with NULL read as false, as the cohort compiler has always written it. */
  orFalse(pred: SqlFragment): SqlFragment;

  /** An aggregate; sum/avg/min/max of no values (or only NULLs) are NULL, as in SQL. */
  aggregate(name: 'count' | 'uniq' | 'sum' | 'avg' | 'min' | 'max', x: SqlFragment | null): SqlFragment;
}

export interface RenderedSql {
  sql: string;
  /** Positional values (DuckDB), or named ones (ClickHouse `{p0:String}` → `p0`). */
  params: readonly QueryParam[] | Readonly<Record<string, QueryParam>>;
}
