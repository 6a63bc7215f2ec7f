import { parseFilterDate, parseFilterNumber } from './time-window';
import type { PropertyCondition, SqlFragment, SqlValue } from './types';

/**
 * One property condition as a SQL boolean over a JSON column. Keys travel as bound JSON-pointer
 * paths (`/key`, with `~` → `~0` and `/` → `~1`), never as `$.key` text: DuckDB reads `$` as the
 * JSON root, so a key like `$browser` would otherwise address something else. Values are bound.
 *
 * Semantics follow the flags service for a server that knows every property: a missing key fails
 * every operator except `is_not_set` and the negative ones (`is_not`, `not_icontains`,
 * `not_regex`), which it passes. Comparisons are on the value's text (JSON text for non-strings).
 */

export const jsonPointer = (key: string) => `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;

export const sql = (text: string, ...params: SqlValue[]): SqlFragment => ({ sql: text, params });

/** Join fragments with a separator, concatenating their parameters in order. */
export function join(parts: SqlFragment[], separator: string): SqlFragment {
  return { sql: parts.map((p) => p.sql).join(separator), params: parts.flatMap((p) => p.params) };
}

export const not = (inner: SqlFragment): SqlFragment => ({ sql: `(NOT ${inner.sql})`, params: inner.params });

const FALSE = sql('FALSE');

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

/** A person's date: epoch seconds, an ISO text with an offset, or a naive text read as UTC. */
function dateOf(text: string, path: string): SqlFragment {
  const reads = [
    `CASE WHEN regexp_full_match(${text}, '[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?') THEN to_timestamp(TRY_CAST(${text} AS DOUBLE))`,
    ` WHEN regexp_matches(${text}, '\\d[T ]\\d\\d:\\d\\d.*([Zz]|[+-]\\d\\d:?\\d\\d)$') THEN TRY_CAST(${text} AS TIMESTAMPTZ)`,
    ` ELSE timezone('UTC', TRY_CAST(${text} AS TIMESTAMP)) END`,
  ].join('');
  // `text` reads the value through one bound path each time it occurs: five times.
  return { sql: reads, params: Array.from({ length: 5 }, () => path) };
}

/** The positive test on the value's text, or null when the filter value can never match. */
function valueTest(column: string, path: string, condition: PropertyCondition, now: Date): SqlFragment | null {
  const text = `json_extract_string(${column}, ?)`;
  const orNull = `coalesce(${text}, 'null')`;
  const { value } = condition;
  switch (condition.operator) {
    case 'exact':
    case 'is_not': {
      if (isBooleanLike(value)) return sql(`(coalesce(lower(${text}) = 'true', false) = ?)`, path, isTrue(value));
      const candidates = (Array.isArray(value) ? value : [value]).map((v) => textOf(v).toLowerCase());
      if (!candidates.length) return null;
      return sql(`lower(${orNull}) IN (${candidates.map(() => '?').join(', ')})`, path, ...candidates);
    }
    case 'icontains':
    case 'not_icontains':
      return sql(`strpos(lower(${orNull}), ?) > 0`, path, textOf(value).toLowerCase());
    case 'regex':
    case 'not_regex':
      return isValidPattern(textOf(value)) ? sql(`regexp_matches(${orNull}, ?)`, path, textOf(value)) : null;
    case 'gt':
    case 'gte':
    case 'lt':
    case 'lte': {
      const number = parseFilterNumber(value);
      const op = { gt: '>', gte: '>=', lt: '<', lte: '<=' }[condition.operator];
      return number === null ? null : sql(`TRY_CAST(${text} AS DOUBLE) ${op} ?`, path, number);
    }
    case 'is_date_before':
    case 'is_date_after': {
      const date = parseFilterDate(value, now);
      const op = condition.operator === 'is_date_before' ? '<' : '>';
      if (date === null) return null;
      const personDate = dateOf(text, path);
      return sql(`(${personDate.sql}) ${op} CAST(? AS TIMESTAMPTZ)`, ...personDate.params, date.toISOString());
    }
    default:
      return null;
  }
}

const NEGATIVE = new Set(['is_not', 'not_icontains', 'not_regex']);

/** The condition as a SQL boolean over `column` (a JSON column name chosen by the compiler). */
export function compileProperty(column: string, condition: PropertyCondition, now: Date): SqlFragment {
  const path = jsonPointer(condition.key);
  const present = sql(`json_exists(${column}, ?)`, path);
  if (condition.operator === 'is_set') return present;
  if (condition.operator === 'is_not_set') return not(present);
  // As in the flags service, a condition without a value matches nobody.
  if (condition.value === null || condition.value === undefined) return FALSE;
  const test = valueTest(column, path, condition, now);
  if (NEGATIVE.has(condition.operator)) {
    // An invalid pattern matches nobody either way; `is_not` of an empty list matches everybody.
    if (!test) return condition.operator === 'not_regex' ? FALSE : sql('TRUE');
    const either = join([not(present), not(sql(`coalesce(${test.sql}, false)`, ...test.params))], ' OR ');
    return { sql: `(${either.sql})`, params: either.params };
  }
  if (!test) return FALSE;
  return { sql: `(${present.sql} AND coalesce(${test.sql}, false))`, params: [...present.params, ...test.params] };
}
