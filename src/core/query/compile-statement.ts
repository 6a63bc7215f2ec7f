import type { Expr, SelectStatement } from './ast';
import { clickhouseType, FIELD_HEADS, readsDistinctIds, readsPersonColumns, resolveField, STAR_FIELDS, type TableName } from './catalog';
import { ExprCompiler, type NameScope } from './compile-expr';
import { invalidInput, LIMITS } from './limits';
import type { PlaceholderValue } from './parse';
import { parseStatement, QUERY_LABEL } from './parse-statement';
import { bind, joinSql, sql, trusted, type SqlFragment } from './sql';
import { fail, PREC, type Site, type Typed } from './types';

/**
 * A HogQL `SELECT` statement compiled for one table's relation (`events` or `persons`). The
 * statement storage runs is `assembleStatement`'s: the request's parts inside, the project scope
 * and the row cap outside.
 */
export interface CompiledStatement {
  /** The table read: the caller gives its relation. */
  table: TableName;
  /** PostHog's `columns`: each entry's alias, else its text as written. */
  columns: string[];
  /** ClickHouse-style type of each column. */
  types: string[];
  /** The SQL alias of each column (`c0`, `c1`, …). */
  aliases: string[];
  distinct: boolean;
  select: SqlFragment;
  where: SqlFragment | null;
  groupBy: SqlFragment | null;
  having: SqlFragment | null;
  orderBy: SqlFragment | null;
  /** LIMIT and OFFSET as written; the caller caps them. */
  limit: number | null;
  offset: number | null;
  /** Over events: the statement reads the event's person (storage joins persons in). */
  readsPersons: boolean;
  /** Over persons: the statement reads `pdi.distinct_id` (storage joins the distinct ids in). */
  readsDistinctIds: boolean;
}

const site = (node: { pos: number }): Site => ({ pos: node.pos, label: QUERY_LABEL, attr: 'query' });

export function compileStatement(source: unknown, values: unknown, now: Date): CompiledStatement {
  if (typeof source !== 'string' || source.trim() === '') throw invalidInput('query must be a non-empty string', 'query');
  const stmt = parseStatement(source, placeholderValues(values));
  const { table, qualifiers } = tableScope(stmt);
  const compile = (expr: Expr, names: NameScope = { table, qualifiers }) => new ExprCompiler(QUERY_LABEL, 'query', now, names).compile(expr, true);
  const condition = (expr: Expr, names: NameScope) => new ExprCompiler(QUERY_LABEL, 'query', now, names).condition(expr);

  const entries = stmt.star
    ? STAR_FIELDS[table].map((name) => ({ typed: resolveField([name], site(stmt.from), table), name, pos: stmt.from.pos }))
    : stmt.select.map((e) => {
        const typed = compile(e.expr);
        checkMixed(typed, e.expr);
        return { typed, name: e.alias ?? e.text, pos: e.expr.pos, alias: e.alias };
      });
  const aliases = new Map<string, Typed>();
  for (const [i, e] of stmt.select.entries()) {
    if (e.alias === null) continue;
    if (aliases.has(e.alias)) fail(site(e.expr), `Alias '${e.alias.slice(0, 100)}' is used twice`);
    aliases.set(e.alias, entries[i]!.typed);
  }
  const names: NameScope = { table, qualifiers, aliases };

  const where = stmt.where && condition(stmt.where, names);
  if (where?.aggregate) fail(site(stmt.where!), 'Aggregate functions are not allowed in WHERE (use HAVING)');
  const positional = (expr: Expr, clause: string): Typed => {
    if (expr.kind === 'literal' && typeof expr.value === 'number' && Number.isInteger(expr.value)) {
      const entry = entries[expr.value - 1];
      return entry ? entry.typed : fail(site(expr), `${clause} position ${expr.value} is not in the select list`);
    }
    const typed = compile(expr, names);
    if (!typed.columns && !typed.aggregate) fail(site(expr), `${clause} needs a field or an expression of fields`);
    return typed;
  };
  const groupBy = stmt.groupBy.map((expr) => {
    const typed = positional(expr, 'GROUP BY');
    if (typed.aggregate) fail(site(expr), 'Aggregate functions are not allowed in GROUP BY');
    return typed;
  });
  const having = stmt.having && condition(stmt.having, names);
  const orderBy = stmt.orderBy.map((o) => ({ typed: positional(o.expr, 'ORDER BY'), descending: o.descending, pos: o.expr.pos }));

  const grouped = groupBy.length > 0 || [...entries.map((e) => e.typed), ...(having ? [having] : []), ...orderBy.map((o) => o.typed)].some((t) => t.aggregate);
  if (grouped) {
    const keys = groupBy.map(fingerprint);
    const check = (typed: Typed, pos: number) => {
      if (typed.columns && !typed.aggregate && !keys.includes(fingerprint(typed))) fail(site({ pos }), 'Expression must be in GROUP BY or inside an aggregate function');
    };
    for (const e of entries) check(e.typed, e.pos);
    if (having) check(having, stmt.having!.pos);
    for (const o of orderBy) check(o.typed, o.pos);
  }
  if (stmt.distinct) {
    const selected = entries.map((e) => fingerprint(e.typed));
    for (const o of orderBy) if (!selected.includes(fingerprint(o.typed))) fail(site(o), 'With DISTINCT, ORDER BY expressions must be in the select list');
  }

  const columnAliases = entries.map((_, i) => `c${i}`);
  // A selected expression is grouped and ordered by its alias: written out again, its bound
  // values (a property's path) would be other parameters, which DuckDB cannot match to the select.
  const selected = entries.map((e) => fingerprint(e.typed));
  const byAlias = (typed: Typed): SqlFragment => {
    const i = selected.indexOf(fingerprint(typed));
    return i >= 0 ? trusted(columnAliases[i]!) : typed;
  };
  const parts = {
    select: joinSql(entries.map((e, i) => sql`${e.typed} AS ${trusted(columnAliases[i]!)}`), ', '),
    where: where && parenthesized(where),
    groupBy: groupBy.length ? joinSql(groupBy.map(byAlias), ', ') : null,
    having: having && parenthesized(having),
    orderBy: orderBy.length ? joinSql(orderBy.map((o) => sql`${byAlias(o.typed)} ${trusted(o.descending ? 'DESC' : 'ASC')}`), ', ') : null,
  };
  const fragments = Object.values(parts);
  return {
    table,
    columns: entries.map((e) => e.name),
    types: entries.map((e) => clickhouseType(e.typed)),
    aliases: columnAliases,
    distinct: stmt.distinct,
    ...parts,
    limit: stmt.limit?.value ?? null,
    offset: stmt.offset?.value ?? null,
    readsPersons: table === 'events' && readsPersonColumns(...fragments),
    readsDistinctIds: table === 'persons' && readsDistinctIds(...fragments),
  };
}

export interface StatementScope {
  /** The project's rows of the statement's table as storage names them (trusted SQL, never a request value). */
  relation: string;
  teamId: number;
  limit: number;
  offset: number;
}

/**
 * The statement run: the project scope is a bound `team_id = ?` ANDed outside the request's
 * WHERE, which sits in its own parentheses, and LIMIT/OFFSET are the caller's (capped) values.
 */
export function assembleStatement(c: CompiledStatement, scope: StatementScope): SqlFragment {
  for (const n of [scope.teamId, scope.limit, scope.offset]) {
    if (!Number.isSafeInteger(n) || n < 0) throw new Error('teamId, limit and offset must be non-negative integers');
  }
  const conditions = [sql`team_id = ${bind(scope.teamId)}`, ...(c.where ? [c.where] : [])];
  const clauses = [sql`SELECT ${trusted(c.distinct ? 'DISTINCT ' : '')}${c.select} FROM ${trusted(scope.relation)} WHERE ${joinSql(conditions, ' AND ')}`];
  if (c.groupBy) clauses.push(sql`GROUP BY ${c.groupBy}`);
  if (c.having) clauses.push(sql`HAVING ${c.having}`);
  if (c.orderBy) clauses.push(sql`ORDER BY ${c.orderBy}`);
  clauses.push(sql`LIMIT ${bind(scope.limit)} OFFSET ${bind(scope.offset)}`);
  return joinSql(clauses, ' ');
}

function tableScope(stmt: SelectStatement): { table: TableName; qualifiers: Set<string> } {
  const name = stmt.from.table.toLowerCase();
  if (!Object.hasOwn(STAR_FIELDS, name)) fail(site(stmt.from), `Unknown table '${stmt.from.table.slice(0, 100)}'`);
  const table = name as TableName;
  const alias = stmt.from.alias;
  if (alias !== null && FIELD_HEADS[table].has(alias)) fail(site(stmt.from), `Table alias '${alias}' is a field name`);
  return { table, qualifiers: new Set(alias === null ? [stmt.from.table] : [stmt.from.table, alias]) };
}

/** The same SQL with the same values: how GROUP BY keys and selected expressions are matched. */
const fingerprint = (t: Typed) => JSON.stringify([t.sql, t.params]);

const parenthesized = (t: Typed): SqlFragment => (t.prec < PREC.atom ? sql`(${t})` : t);

function checkMixed(typed: Typed, expr: Expr): void {
  if (typed.aggregate && typed.columns) fail(site(expr), 'Expression mixes aggregate functions with fields outside them');
}

const isScalar = (v: unknown): v is string | number | boolean | null =>
  v === null || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'string' && v.length <= LIMITS.placeholderLength);

/** `values`: each a string, number, boolean or null, or a list of them (for IN). */
function placeholderValues(values: unknown): Map<string, PlaceholderValue> {
  if (values === undefined || values === null) return new Map();
  if (typeof values !== 'object' || Array.isArray(values)) throw invalidInput('values must be an object', 'values');
  const entries = Object.entries(values);
  if (entries.length > LIMITS.placeholders) throw invalidInput(`values has more than ${LIMITS.placeholders} entries`, 'values');
  for (const [name, value] of entries) {
    const ok = isScalar(value) || (Array.isArray(value) && value.length <= LIMITS.listValues && value.every(isScalar));
    if (!ok) throw invalidInput(`values.${name.slice(0, 100)} must be a string, number, boolean or null, or a list of them`, 'values');
  }
  return new Map(entries as Array<[string, PlaceholderValue]>);
}
