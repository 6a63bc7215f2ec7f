import type { CompiledSelect } from './compile';
import type { CompiledStatement } from './compile-statement';
import type { Dialect } from './dialect';
import { DUCKDB } from './dialect-duckdb';
import { joinSql, sql, trusted, type SqlFragment } from './sql';

export interface EventsQueryParts {
  /** The events relation as storage names it (a table, view or subquery). Trusted SQL, never a request value. */
  relation: string;
  teamId: number;
  /** From `compileEventFilters`. */
  filters?: SqlFragment | null;
  /** From `compileSelect`; without it, `columns` are selected. */
  select?: CompiledSelect | null;
  /** Trusted column list for a plain list query (no `select`). */
  columns?: readonly string[];
  /** Trusted ORDER BY text; defaults to the select's default order, else `timestamp DESC`. */
  orderBy?: string;
  limit: number;
  offset?: number;
  /** The dialect the pieces were compiled for (default DuckDB). */
  dialect?: Dialect;
}

/**
 * The one place the pieces meet. The team scope is a bound parameter ANDed outside every
 * request-derived condition, each of which sits in its own parentheses, so no filter or `where`
 * can widen the query beyond the team.
 */
export function assembleEventsQuery(parts: EventsQueryParts): SqlFragment {
  const { select } = parts;
  if (!select && !parts.columns?.length) throw new Error('assembleEventsQuery needs a select or a column list');
  for (const n of [parts.teamId, parts.limit, parts.offset ?? 0]) {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error('teamId, limit and offset must be non-negative integers');
  }
  const { bind } = parts.dialect ?? DUCKDB;
  const selectList = select ? { sql: select.selectSql, params: select.selectParams } : trusted(parts.columns!.join(', '));
  const conditions: SqlFragment[] = [sql`team_id = ${bind(parts.teamId)}`];
  if (parts.filters?.sql) conditions.push(sql`(${parts.filters})`);
  if (select?.whereSql) conditions.push(sql`(${{ sql: select.whereSql, params: select.whereParams }})`);
  const clauses: SqlFragment[] = [
    sql`SELECT ${selectList} FROM ${trusted(parts.relation)} WHERE ${joinSql(conditions, ' AND ')}`,
  ];
  if (select?.groupBySql) clauses.push(trusted(`GROUP BY ${select.groupBySql}`));
  if (select?.havingSql) clauses.push(sql`HAVING ${{ sql: select.havingSql, params: select.havingParams }}`);
  clauses.push(trusted(`ORDER BY ${parts.orderBy ?? select?.orderBySql ?? 'timestamp DESC'}`));
  clauses.push(sql`LIMIT ${bind(parts.limit)} OFFSET ${bind(parts.offset ?? 0)}`);
  return joinSql(clauses, ' ');
}

export interface StatementScope {
  /** The project's rows of the statement's table as storage names them (trusted SQL, never a request value). */
  relation: string;
  teamId: number;
  limit: number;
  offset: number;
  /** The dialect the statement was compiled for (default DuckDB). */
  dialect?: Dialect;
}

/**
 * The statement run: the project scope is a bound `team_id = ?` ANDed outside the request's
 * WHERE, which sits in its own parentheses, and LIMIT/OFFSET are the caller's (capped) values.
 */
export function assembleStatement(c: CompiledStatement, scope: StatementScope): SqlFragment {
  for (const n of [scope.teamId, scope.limit, scope.offset]) {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error('teamId, limit and offset must be non-negative integers');
  }
  const { bind } = scope.dialect ?? DUCKDB;
  const conditions = [sql`team_id = ${bind(scope.teamId)}`, ...(c.where ? [c.where] : [])];
  const clauses = [sql`SELECT ${trusted(c.distinct ? 'DISTINCT ' : '')}${c.select} FROM ${trusted(scope.relation)} WHERE ${joinSql(conditions, ' AND ')}`];
  if (c.groupBy) clauses.push(sql`GROUP BY ${c.groupBy}`);
  if (c.having) clauses.push(sql`HAVING ${c.having}`);
  if (c.orderBy) clauses.push(sql`ORDER BY ${c.orderBy}`);
  clauses.push(sql`LIMIT ${bind(scope.limit)} OFFSET ${bind(scope.offset)}`);
  return joinSql(clauses, ' ');
}
