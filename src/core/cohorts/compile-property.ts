import type { Dialect } from '../query/dialect';
import { DUCKDB, jsonPointer as pointerOf } from '../query/dialect-duckdb';
import { joinSql, sql, trusted, type SqlFragment } from '../query/sql';
import { parseFilterDate, parseFilterNumber } from './time-window';
import type { PropertyCondition } from './types';

/**
 * One property condition as a SQL boolean over a JSON column, in a dialect (DuckDB unless told).
 * Keys are bound the dialect's way (DuckDB: a JSON-pointer path, never `$.key` text, which would
 * read `$browser` as the root), and so are values.
 *
 * Semantics follow the flags service for a server that knows every property: a missing key fails
 * every operator except `is_not_set` and the negative ones (`is_not`, `not_icontains`,
 * `not_regex`), which it passes. Comparisons are on the value's text (JSON text for non-strings).
 */

/** The DuckDB path of one key (`/key`, with `~` → `~0` and `/` → `~1`). */
export const jsonPointer = (key: string) => pointerOf([key]);

export const not = (inner: SqlFragment): SqlFragment => sql`(NOT ${inner})`;

const textOf = (value: unknown): string => (typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null'));

const isBooleanLike = (value: unknown): boolean =>
  typeof value === 'boolean' ||
  (typeof value === 'string' && ['true', 'false'].includes(value.toLowerCase())) ||
  (Array.isArray(value) && value.length > 0 && value.every(isBooleanLike));

const isTrue = (value: unknown): boolean =>
  value === true || (typeof value === 'string' && value.toLowerCase() === 'true') || (Array.isArray(value) && value.every(isTrue));

/** RE2 understands a leading `(?i)`; JS does not, so it is stripped before the syntax check. */
const isValidPattern = (pattern: string) => {
  try {
    new RegExp(pattern.replace(/^\(\?[imsU]+\)/, ''));
    return true;
  } catch {
    return false;
  }
};

const COMPARISONS = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

/** The positive test on the value's text, or null when the filter value can never match. */
function valueTest(d: Dialect, column: SqlFragment, condition: PropertyCondition, now: Date): SqlFragment | null {
  const text = d.jsonText(column, [condition.key]);
  const orNull = sql`coalesce(${text}, 'null')`;
  const { value } = condition;
  switch (condition.operator) {
    case 'exact':
    case 'is_not': {
      if (isBooleanLike(value)) return sql`(${d.orFalse(sql`${d.lower(text)} = 'true'`)} = ${d.bind(isTrue(value))})`;
      const candidates = (Array.isArray(value) ? value : [value]).map((v) => textOf(v).toLowerCase());
      if (!candidates.length) return null;
      return sql`${d.lower(orNull)} IN (${joinSql(candidates.map((c) => d.bind(c)), ', ')})`;
    }
    case 'icontains':
    case 'not_icontains':
      return d.contains(d.lower(orNull), d.bind(textOf(value).toLowerCase()));
    case 'regex':
    case 'not_regex':
      return isValidPattern(textOf(value)) ? d.regexMatch(orNull, textOf(value)) : null;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const number = parseFilterNumber(value);
      return number === null ? null : sql`${d.tryFloat(text, 'string')} ${trusted(COMPARISONS[condition.operator])} ${d.bind(number)}`;
    }
    case 'is_date_before':
    case 'is_date_after': {
      const date = parseFilterDate(value, now);
      if (date === null) return null;
      const op = trusted(condition.operator === 'is_date_before' ? '<' : '>');
      return sql`(${d.personDate(text)}) ${op} ${d.isoInstant(date.toISOString(), true)}`;
    }
    default:
      return null;
  }
}

const NEGATIVE = new Set(['is_not', 'not_icontains', 'not_regex']);

/** The condition as a SQL boolean over `column` (a JSON column name chosen by the compiler). */
export function compileProperty(column: string, condition: PropertyCondition, now: Date, d: Dialect = DUCKDB): SqlFragment {
  const json = trusted(column);
  const present = d.jsonHas(json, [condition.key]);
  if (condition.operator === 'is_set') return present;
  if (condition.operator === 'is_not_set') return not(present);
  // As in the flags service, a condition without a value matches nobody.
  if (condition.value === null || condition.value === undefined) return trusted(d.false);
  const test = valueTest(d, json, condition, now);
  if (NEGATIVE.has(condition.operator)) {
    // An invalid pattern matches nobody either way; `is_not` of an empty list matches everybody.
    if (!test) return trusted(condition.operator === 'not_regex' ? d.false : d.true);
    return sql`(${joinSql([not(present), not(d.orFalse(test))], ' OR ')})`;
  }
  if (!test) return trusted(d.false);
  return sql`(${present} AND ${d.orFalse(test)})`;
}
