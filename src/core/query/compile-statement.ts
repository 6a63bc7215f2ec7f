import type { Expr, SelectStatement } from './ast';
import { clickhouseType, FIELD_HEADS, readsDistinctIds, readsPersonColumns, resolveField, STAR_FIELDS, type TableName } from './catalog';
import { ExprCompiler, type NameScope } from './compile-expr';
import type { Dialect } from './dialect';
import { DUCKDB } from './dialect-duckdb';
import { invalidInput } from './limits';
import { parseStatement, placeholderValues, QUERY_LABEL } from './parse-statement';
import { joinSql, sql, trusted, type SqlFragment } from './sql';
import { fail, PREC, type Site, type Typed } from './types';

/**
 * A HogQL `SELECT` statement compiled for one table's relation (`events` or `persons`). The
 * statement storage runs is `assembleStatement`'s (assemble.ts): the request's parts inside, the
 * project scope and the row cap outside.
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
  /** The statement as compiled: WHERE's aggregates moved to HAVING, the GROUP BY and ORDER BY it got. */
  resolved: SelectStatement;
}

/** Where a top-level expression came from: the label and parameter its errors name. */
export interface Origin {
  label: string;
  attr: string;
}

const QUERY_ORIGIN: Origin = { label: QUERY_LABEL, attr: 'query' };

/** What another request shape (EventsQuery) changes in how a parsed statement is compiled. */
export interface StatementOptions {
  /** The origin of each top-level expression, for error positions (default: the query). */
  origin?: (node: Expr) => Origin | undefined;
  /** WHERE entries that aggregate become HAVING entries (else they are a 400). */
  aggregatesToHaving?: boolean;
  /** With an aggregate selected, GROUP BY every other selected expression that reads fields. */
  groupBySelected?: boolean;
  /** Without ORDER BY: which selected entries to order by, given them compiled. */
  defaultOrder?: (selected: readonly Typed[]) => Array<{ index: number; descending: boolean }>;
  /** The engine the SQL is written for (default DuckDB). */
  dialect?: Dialect;
}

export function compileStatement(source: unknown, values: unknown, now: Date, dialect: Dialect = DUCKDB): CompiledStatement {
  if (typeof source !== 'string' || source.trim() === '') throw invalidInput('query must be a non-empty string', 'query');
  return compileSelectStatement(parseStatement(source, placeholderValues(values)), now, { dialect });
}

interface Entry {
  typed: Typed;
  name: string;
  node: Expr | SelectStatement['from'];
}

/** A parsed statement (the query endpoint's, or one an EventsQuery describes) compiled. */
export function compileSelectStatement(stmt: SelectStatement, now: Date, options: StatementOptions = {}): CompiledStatement {
  return new StatementCompiler(stmt, now, options).compile();
}

class StatementCompiler {
  private readonly table: TableName;
  private names: NameScope;

  constructor(
    private readonly stmt: SelectStatement,
    private readonly now: Date,
    private readonly options: StatementOptions,
  ) {
    const { table, qualifiers } = this.tableScope();
    this.table = table;
    this.names = { table, qualifiers };
  }

  private site(node: Expr | SelectStatement['from']): Site {
    const origin = ('kind' in node && this.options.origin?.(node)) || QUERY_ORIGIN;
    return { pos: node.pos, ...origin };
  }

  private compiler(expr: Expr): ExprCompiler {
    const origin = this.options.origin?.(expr) ?? QUERY_ORIGIN;
    return new ExprCompiler(origin.label, origin.attr, this.now, this.names, this.options.dialect);
  }

  compile(): CompiledStatement {
    const entries = this.selectEntries();
    this.names = { ...this.names, aliases: this.aliases(entries) };
    const conditions = this.stmt.where.map((expr) => ({ expr, typed: this.compiler(expr).condition(expr) }));
    for (const c of conditions) if (c.typed.aggregate && !this.options.aggregatesToHaving) fail(this.site(c.expr), 'Aggregate functions are not allowed in WHERE (use HAVING)');
    const where = conditions.filter((c) => !c.typed.aggregate);
    const having = [...conditions.filter((c) => c.typed.aggregate), ...this.stmt.having.map((expr) => ({ expr, typed: this.compiler(expr).condition(expr) }))];
    const groupBy = this.groupBy(entries);
    const orderBy = this.orderBy(entries);
    this.checkGrouping(entries, groupBy, having, orderBy);
    return this.finish(entries, { where, groupBy, having, orderBy });
  }

  private selectEntries(): Entry[] {
    const { stmt, table } = this;
    if (stmt.star) return STAR_FIELDS[table].map((name) => ({ typed: resolveField(this.options.dialect ?? DUCKDB, [name], this.site(stmt.from), table), name, node: stmt.from }));
    return stmt.select.map((e) => {
      const typed = this.compiler(e.expr).compile(e.expr, true);
      if (typed.aggregate && typed.columns) fail(this.site(e.expr), 'Expression mixes aggregate functions with fields outside them');
      return { typed, name: e.alias ?? e.text, node: e.expr };
    });
  }

  private aliases(entries: Entry[]): Map<string, Typed> {
    const aliases = new Map<string, Typed>();
    for (const [i, e] of this.stmt.select.entries()) {
      if (e.alias === null) continue;
      if (aliases.has(e.alias)) fail(this.site(e.expr), `Alias '${e.alias.slice(0, 100)}' is used twice`);
      aliases.set(e.alias, entries[i]!.typed);
    }
    return aliases;
  }

  private positional(entries: Entry[], expr: Expr, clause: string): Typed {
    if (expr.kind === 'literal' && typeof expr.value === 'number' && Number.isInteger(expr.value)) {
      const entry = entries[expr.value - 1];
      return entry ? entry.typed : fail(this.site(expr), `${clause} position ${expr.value} is not in the select list`);
    }
    const typed = this.compiler(expr).compile(expr, true);
    if (!typed.columns && !typed.aggregate) fail(this.site(expr), `${clause} needs a field or an expression of fields`);
    return typed;
  }

  private groupBy(entries: Entry[]): Array<{ typed: Typed; node: Entry['node'] }> {
    const written = this.stmt.groupBy.map((expr) => {
      const typed = this.positional(entries, expr, 'GROUP BY');
      if (typed.aggregate) fail(this.site(expr), 'Aggregate functions are not allowed in GROUP BY');
      return { typed, node: expr };
    });
    if (written.length || !this.options.groupBySelected || !entries.some((e) => e.typed.aggregate)) return written;
    return entries.filter((e) => !e.typed.aggregate && e.typed.columns);
  }

  private orderBy(entries: Entry[]): Array<{ typed: Typed; descending: boolean; node: Expr | SelectStatement['from'] }> {
    if (this.stmt.orderBy.length === 0 && this.options.defaultOrder) {
      return this.options.defaultOrder(entries.map((e) => e.typed)).map((o) => ({ ...entries[o.index]!, descending: o.descending }));
    }
    return this.stmt.orderBy.map((o) => ({ typed: this.positional(entries, o.expr, 'ORDER BY'), descending: o.descending, node: o.expr }));
  }

  private checkGrouping(entries: Entry[], groupBy: Array<{ typed: Typed }>, having: Condition[], orderBy: Array<{ typed: Typed; node: Entry['node'] }>): void {
    const all = [...entries, ...having.map((h) => ({ typed: h.typed, node: h.expr })), ...orderBy];
    if (groupBy.length > 0 || all.some((e) => e.typed.aggregate)) {
      const keys = groupBy.map((g) => fingerprint(g.typed));
      for (const e of all) {
        if (e.typed.columns && !e.typed.aggregate && !keys.includes(fingerprint(e.typed))) fail(this.site(e.node), 'Expression must be in GROUP BY or inside an aggregate function');
      }
    }
    if (this.stmt.distinct) {
      const selected = entries.map((e) => fingerprint(e.typed));
      for (const o of orderBy) if (!selected.includes(fingerprint(o.typed))) fail(this.site(o.node), 'With DISTINCT, ORDER BY expressions must be in the select list');
    }
  }

  private finish(
    entries: Entry[],
    c: { where: Condition[]; groupBy: Array<{ typed: Typed; node: Entry['node'] }>; having: Condition[]; orderBy: Array<{ typed: Typed; descending: boolean; node: Entry['node'] }> },
  ): CompiledStatement {
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
      where: allOf(c.where),
      groupBy: c.groupBy.length ? joinSql(unique(c.groupBy.map((g) => byAlias(g.typed))), ', ') : null,
      having: allOf(c.having),
      orderBy: c.orderBy.length ? joinSql(c.orderBy.map((o) => sql`${byAlias(o.typed)} ${trusted(o.descending ? 'DESC' : 'ASC')}`), ', ') : null,
    };
    const fragments = Object.values(parts);
    return {
      table: this.table,
      columns: entries.map((e) => e.name),
      types: entries.map((e) => clickhouseType(e.typed)),
      aliases: columnAliases,
      distinct: this.stmt.distinct,
      ...parts,
      limit: this.stmt.limit?.value ?? null,
      offset: this.stmt.offset?.value ?? null,
      readsPersons: this.table === 'events' && readsPersonColumns(...fragments),
      readsDistinctIds: this.table === 'persons' && readsDistinctIds(...fragments),
      resolved: {
        ...this.stmt,
        where: c.where.map((w) => w.expr),
        having: c.having.map((h) => h.expr),
        groupBy: c.groupBy.map((g) => g.node).filter(isExpr),
        orderBy: c.orderBy.filter((o) => isExpr(o.node)).map((o) => ({ expr: o.node as Expr, descending: o.descending })),
      },
    };
  }

  private tableScope(): { table: TableName; qualifiers: Set<string> } {
    const { from } = this.stmt;
    const name = from.table.toLowerCase();
    if (!Object.hasOwn(STAR_FIELDS, name)) fail(this.site(from), `Unknown table '${from.table.slice(0, 100)}'`);
    const table = name as TableName;
    if (from.alias !== null && FIELD_HEADS[table].has(from.alias)) fail(this.site(from), `Table alias '${from.alias}' is a field name`);
    return { table, qualifiers: new Set(from.alias === null ? [from.table] : [from.table, from.alias]) };
  }
}

/** The first of each fragment (same SQL, same values). */
const unique = (fragments: SqlFragment[]): SqlFragment[] => fragments.filter((f, i) => fragments.findIndex((g) => JSON.stringify([g.sql, g.params]) === JSON.stringify([f.sql, f.params])) === i);

const isExpr = (node: Entry['node']): node is Expr => 'kind' in node;

interface Condition {
  expr: Expr;
  typed: Typed;
}

/** Conditions ANDed, each in its own parentheses unless an atom; null when there are none. */
function allOf(conditions: Condition[]): SqlFragment | null {
  return conditions.length ? joinSql(conditions.map((c) => parenthesized(c.typed)), ' AND ') : null;
}

/** The same SQL with the same values: how GROUP BY keys and selected expressions are matched. */
const fingerprint = (t: Typed) => JSON.stringify([t.sql, t.params]);

const parenthesized = (t: Typed): SqlFragment => (t.prec < PREC.atom ? sql`(${t})` : t);
