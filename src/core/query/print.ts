import type { Expr, SelectStatement } from './ast';
import { KEYWORDS, RESERVED } from './tokenize';

/**
 * HogQL text of a statement built from a request (an EventsQuery), for its response's `hogql`:
 * what was run, readable. Display only: what runs is the compiled tree, never this text.
 */
export function printStatement(stmt: SelectStatement, limit: number, offset: number): string {
  const select = stmt.select.map((e) => (e.alias === null ? printExpr(e.expr) : `${printExpr(e.expr)} AS ${identifier(e.alias)}`));
  const clauses = [`SELECT ${stmt.distinct ? 'DISTINCT ' : ''}${stmt.star ? '*' : select.join(', ')}`, `FROM ${stmt.from.table}`];
  if (stmt.where.length) clauses.push(`WHERE ${stmt.where.map(printExpr).join(' AND ')}`);
  if (stmt.groupBy.length) clauses.push(`GROUP BY ${stmt.groupBy.map(printExpr).join(', ')}`);
  if (stmt.having.length) clauses.push(`HAVING ${stmt.having.map(printExpr).join(' AND ')}`);
  if (stmt.orderBy.length) clauses.push(`ORDER BY ${stmt.orderBy.map((o) => `${printExpr(o.expr)} ${o.descending ? 'DESC' : 'ASC'}`).join(', ')}`);
  clauses.push(`LIMIT ${limit}`);
  if (offset) clauses.push(`OFFSET ${offset}`);
  return clauses.join(' ');
}

/** Every compound operand in parentheses: longer than needed, never ambiguous. */
export function printExpr(e: Expr): string {
  switch (e.kind) {
    case 'literal':
      return literal(e.value);
    case 'instant':
      return literal(e.date ? e.value.slice(0, 10) : e.value);
    case 'field':
      return e.chain.map(identifier).join('.');
    case 'call':
      return `${e.name}(${e.star ? '*' : e.args.map(printExpr).join(', ')})`;
    case 'arith':
    case 'compare':
      return `${operand(e.left)} ${e.op} ${operand(e.right)}`;
    case 'logical':
      return e.operands.map(operand).join(` ${e.op} `);
    case 'not':
      return `NOT ${operand(e.operand)}`;
    case 'neg':
      return `-${operand(e.operand)}`;
    case 'in':
      return `${operand(e.operand)} ${e.negated ? 'NOT IN' : 'IN'} (${e.list.map(printExpr).join(', ')})`;
    case 'isNull':
      return `${operand(e.operand)} IS ${e.negated ? 'NOT ' : ''}NULL`;
    case 'like':
      return `${operand(e.operand)} ${e.negated ? 'NOT ' : ''}${e.caseInsensitive ? 'ILIKE' : 'LIKE'} ${operand(e.pattern)}`;
    case 'interval':
      return `INTERVAL ${e.amount} ${e.unit}`;
  }
}

const ATOMS = new Set<Expr['kind']>(['literal', 'instant', 'field', 'call', 'interval']);
const operand = (e: Expr): string => (ATOMS.has(e.kind) ? printExpr(e) : `(${printExpr(e)})`);

function literal(value: string | number | boolean | null): string {
  if (value === null) return 'NULL';
  if (typeof value === 'string') return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return String(value);
}

function identifier(name: string): string {
  const lower = name.toLowerCase();
  if (/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) && !KEYWORDS.has(lower) && !RESERVED.has(lower)) return name;
  return `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}
