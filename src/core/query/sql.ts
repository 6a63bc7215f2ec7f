/**
 * SQL fragments, the one way SQL is built (the query compiler, the cohort compiler, storage): text
 * written in code plus the values bound to its placeholders, in placeholder order. Fragments
 * concatenate by concatenating both parts, so the storage layer can splice compiled pieces into its
 * own statement without renumbering anything; a dialect's `render` numbers them at the end where
 * its engine wants names (ClickHouse's `{p0:String}`).
 *
 * The `sql` template accepts only fragments as interpolations: a request string cannot reach the
 * SQL text by accident, it has to go through `bind` (a placeholder) first.
 */
export type QueryParam = string | number | boolean;

export interface SqlFragment {
  readonly sql: string;
  readonly params: readonly QueryParam[];
}

export function sql(strings: TemplateStringsArray, ...parts: SqlFragment[]): SqlFragment {
  let text = strings[0] ?? '';
  const params: QueryParam[] = [];
  parts.forEach((part, i) => {
    text += part.sql + (strings[i + 1] ?? '');
    params.push(...part.params);
  });
  return { sql: text, params };
}

/** Text owned by this code (a catalog column, a function name); never a request value. */
export const trusted = (text: string): SqlFragment => ({ sql: text, params: [] });

/** DuckDB's placeholder, `?` (the DuckDB dialect's `bind`; other dialects have their own). */
export function bind(value: QueryParam): SqlFragment {
  if (typeof value !== 'number') return { sql: '?', params: [value] };
  if (!Number.isFinite(value)) throw new RangeError('non-finite numbers are never bound');
  // DuckDB's client types a JS integer as INTEGER/BIGINT; one beyond 2^53 may not fit BIGINT and
  // would fail at bind time, so it travels as text and becomes a DOUBLE in SQL.
  if (Number.isInteger(value) && !Number.isSafeInteger(value)) return { sql: 'CAST(? AS DOUBLE)', params: [String(value)] };
  return { sql: '?', params: [value] };
}

/** Whether a fragment holds no SQL at all (no condition): what `allOf` leaves out. */
export const isEmptySql = (fragment: SqlFragment): boolean => fragment.sql.trim() === '';

export function joinSql(parts: readonly SqlFragment[], separator: string): SqlFragment {
  return {
    sql: parts.map((p) => p.sql).join(separator),
    params: parts.flatMap((p) => p.params),
  };
}
