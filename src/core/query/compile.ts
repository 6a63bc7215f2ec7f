import { clickhouseType } from './catalog';
import { ExprCompiler } from './compile-expr';
import type { Dialect } from './dialect';
import { DUCKDB } from './dialect-duckdb';
import { invalidInput, LIMITS } from './limits';
import { parseExpression, parseSelectExpression, type Expr } from './parse';
import { joinSql, sql, trusted, type QueryParam } from './sql';
import { fail, PREC, type Typed } from './types';

export { compileEventFilters, parseListOrder, type EventFilterParams } from './filters';
export { parseRelativeOrIsoDate } from './dates';

/**
 * The `select`/`where` of the events API compiled for one query over the events relation:
 *
 *   SELECT <selectSql> FROM <relation> WHERE team_id = ? [AND (<filters>)] [AND (<whereSql>)]
 *   [GROUP BY <groupBySql>] [HAVING <havingSql>] ORDER BY <orderBySql> LIMIT ? OFFSET ?
 *
 * Params go in the order their placeholders appear: select, team, filters, where, having, limit,
 * offset (see `assembleEventsQuery`, which does exactly this).
 */
export interface CompiledSelect {
  /** PostHog's `columns`: the alias when one is given, else the expression as sent. */
  columns: string[];
  /** PostHog's `types`, ClickHouse-style (`String`, `UInt64`, `Nullable(String)`, …). */
  types: string[];
  /** The SQL alias of each select entry (`c0`, `c1`, …); GROUP BY and ORDER BY use them. */
  aliases: string[];
  selectSql: string;
  selectParams: QueryParam[];
  /** The non-aggregate `where` entries, AND-ed; null when there are none. */
  whereSql: string | null;
  whereParams: QueryParam[];
  /** `where` entries that use aggregates (PostHog moves them to HAVING). */
  havingSql: string | null;
  havingParams: QueryParam[];
  /** Aliases of the non-aggregate select entries, when any aggregate is selected. */
  groupBySql: string | null;
  /** PostHog's default order: count() DESC, else the first aggregate DESC, else timestamp DESC, else the first column. */
  orderBySql: string;
  hasAggregate: boolean;
  /**
   * The query only counts the rows: one select entry, `count()` (or `count(*)`), and no `where`,
   * so no grouping or HAVING either. Its answer is the listing's total, which the caller may
   * take from somewhere cheaper than a scan.
   */
  countOnly: boolean;
  /**
   * Per entry, the property it reads when it is one property as stored (`properties.$screen_width`,
   * `person.properties.email`): an export can type that column by its property definition.
   */
  properties: Array<SelectedProperty | null>;
}

export interface SelectedProperty {
  kind: 'event' | 'person';
  key: string;
}

export function compileSelect(selectExprs: readonly string[], whereExprs: readonly string[], now: Date, dialect: Dialect = DUCKDB): CompiledSelect {
  checkList(selectExprs, 'select', false);
  checkList(whereExprs, 'where', true);
  const selected = selectExprs.map((source, i) => compileSelectEntry(source, `select[${i}]`, now, dialect));
  const hasAggregate = selected.some((s) => s.typed.aggregate);
  const aliases = selected.map((_, i) => `c${i}`);
  const select = joinSql(selected.map((s, i) => sql`${s.typed} AS ${trusted(aliases[i] as string)}`), ', ');
  const conditions = whereExprs.map((source, i) => compileCondition(source, `where[${i}]`, now, dialect));
  const having = conditions.filter((c) => c.typed.aggregate);
  const firstHaving = having[0];
  if (firstHaving && !hasAggregate) fail(firstHaving.site, 'An aggregate in where needs an aggregate in select');
  const where = joinSql(conditions.filter((c) => !c.typed.aggregate).map((c) => andOperand(c.typed)), ' AND ');
  const havingSql = joinSql(having.map((c) => andOperand(c.typed)), ' AND ');
  const grouped = aliases.filter((_, i) => !selected[i]?.typed.aggregate && selected[i]?.typed.columns);
  return {
    columns: selected.map((s, i) => s.alias ?? (selectExprs[i] as string)),
    types: selected.map((s) => clickhouseType(s.typed)),
    aliases,
    selectSql: select.sql,
    selectParams: [...select.params],
    whereSql: where.sql || null,
    whereParams: [...where.params],
    havingSql: havingSql.sql || null,
    havingParams: [...havingSql.params],
    groupBySql: hasAggregate && grouped.length ? grouped.join(', ') : null,
    orderBySql: defaultOrder(selectExprs, selected.map((s) => s.typed), aliases),
    hasAggregate,
    countOnly: selected.length === 1 && countsRows(selected[0]!.expr) && conditions.length === 0,
    properties: selected.map((s) => s.property),
  };
}

function compileSelectEntry(source: string, label: string, now: Date, dialect: Dialect) {
  const { expr, alias } = parseSelectExpression(source, label, 'select');
  const compiler = new ExprCompiler(label, 'select', now, {}, dialect);
  const typed = compiler.compile(expr, true);
  checkMixed(typed, compiler.site(expr));
  return { expr, typed, alias, property: selectedProperty(expr) };
}

function selectedProperty(expr: Expr): SelectedProperty | null {
  if (expr.kind !== 'field') return null;
  const [a, b, c, ...rest] = expr.chain;
  if (a === 'properties' && b !== undefined && c === undefined) return { kind: 'event', key: b };
  if (a === 'person' && b === 'properties' && c !== undefined && rest.length === 0) return { kind: 'person', key: c };
  return null;
}

/** `count()` or `count(*)`: every row, not the rows where an argument is non-null. */
const countsRows = (e: Expr) => e.kind === 'call' && e.name.toLowerCase() === 'count' && e.args.length === 0;

function compileCondition(source: string, label: string, now: Date, dialect: Dialect) {
  const expr = parseExpression(source, label, 'where');
  const compiler = new ExprCompiler(label, 'where', now, {}, dialect);
  const typed = compiler.condition(expr);
  const site = compiler.site(expr);
  checkMixed(typed, site);
  return { typed, site };
}

/** `count() + properties.x` has no meaning per group; ClickHouse and DuckDB both refuse it. */
function checkMixed(typed: Typed, site: ReturnType<ExprCompiler['site']>): void {
  if (typed.aggregate && typed.columns) fail(site, 'Expression mixes aggregate functions with fields outside them');
}

const andOperand = (t: Typed) => (t.prec < PREC.and ? sql`(${t})` : t);

function defaultOrder(sources: readonly string[], typed: Typed[], aliases: string[]): string {
  const count = sources.indexOf('count()');
  if (count >= 0) return `${aliases[count]} DESC`;
  const aggregate = typed.findIndex((t) => t.aggregate);
  if (aggregate >= 0) return `${aliases[aggregate]} DESC`;
  const timestamp = sources.indexOf('timestamp');
  if (timestamp >= 0) return `${aliases[timestamp]} DESC`;
  return `${aliases[0]} ASC`;
}

function checkList(list: readonly string[], attr: string, allowEmpty: boolean): void {
  if (!Array.isArray(list) || list.some((s) => typeof s !== 'string')) throw invalidInput(`${attr} must be a list of strings`, attr);
  if (!allowEmpty && list.length === 0) throw invalidInput(`${attr} must not be empty`, attr);
  if (list.length > LIMITS.expressions) throw invalidInput(`${attr} has more than ${LIMITS.expressions} entries`, attr);
}

/**
 * The `select`/`where` query parameters: a JSON-serialized array of expressions. Repeated
 * parameters (`select=a&select=b`) arrive as an array and are taken one expression each.
 */
export function parseExpressionList(value: unknown, attr: string): string[] {
  if (value === undefined || value === null || value === '') return [];
  if (Array.isArray(value) && value.length !== 1) return value.map((v) => expectString(v, attr));
  const text = Array.isArray(value) ? value[0] : value;
  if (typeof text !== 'string') throw invalidInput(`${attr} must be a JSON array of strings`, attr);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalidInput(`${attr} must be a JSON array of strings`, attr);
  }
  if (!Array.isArray(parsed)) throw invalidInput(`${attr} must be a JSON array of strings`, attr);
  return parsed.map((v) => expectString(v, attr));
}

function expectString(value: unknown, attr: string): string {
  if (typeof value !== 'string') throw invalidInput(`${attr} must be a JSON array of strings`, attr);
  return value;
}
