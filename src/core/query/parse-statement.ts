import type { Expr, SelectEntry, SelectStatement } from './ast';
import { invalidInput, LIMITS } from './limits';
import { Parser, type PlaceholderValue } from './parse';
import { tokenize, type Token } from './tokenize';

/** Where statement errors point: `at position 14 of query`, attr `query`. */
export const QUERY_LABEL = 'query';

/**
 * Parse a HogQL `SELECT` statement over one table. The clauses are those of ClickHouse, in its
 * order; each expression is the `select`/`where` grammar. Anything else (a second statement,
 * UNION, JOIN, a subquery, a table function) is a 400 with its position: the compiler can then
 * put the project scope around all of it.
 */
export function parseStatement(source: string, values: ReadonlyMap<string, PlaceholderValue>): SelectStatement {
  const parser = new StatementParser(source, tokenize(source, QUERY_LABEL, 'query', { statement: true }), values);
  return parser.statement();
}

class StatementParser extends Parser {
  constructor(
    private readonly source: string,
    tokens: Token[],
    values: ReadonlyMap<string, PlaceholderValue>,
  ) {
    super(tokens, QUERY_LABEL, 'query', values);
  }

  statement(): SelectStatement {
    this.keyword('select');
    const distinct = this.acceptKeyword('distinct');
    const star = this.peek().kind === 'op' && this.peek().value === '*';
    if (star) this.i++;
    const select = star ? [] : this.list(() => this.selectEntry());
    this.keyword('from');
    const from = this.table();
    const where = this.acceptKeyword('where') ? [this.expression()] : [];
    const groupBy = this.acceptPair('group', 'by') ? this.list(() => this.expression()) : [];
    const having = this.acceptKeyword('having') ? [this.expression()] : [];
    const orderBy = this.acceptPair('order', 'by') ? this.list(() => this.orderEntry()) : [];
    const limit = this.acceptKeyword('limit') ? this.count() : null;
    const offset = this.acceptKeyword('offset') ? this.count() : null;
    this.expectEnd();
    return { distinct, star, select, from, where, groupBy, having, orderBy, limit, offset };
  }

  private selectEntry(): SelectEntry {
    const start = this.peek().pos;
    const expr = this.expression();
    const text = this.source.slice(start, this.tokens[this.i - 1]!.end);
    // `AS alias`, or ClickHouse's bare `expr alias`.
    const bare = this.peek().kind === 'ident' && !this.peek().keyword ? this.next().value : null;
    return { expr, alias: bare ?? this.optionalAlias(), text };
  }

  private orderEntry(): { expr: Expr; descending: boolean } {
    const expr = this.expression();
    return { expr, descending: this.optionalDirection() };
  }

  private table(): SelectStatement['from'] {
    const token = this.next();
    if (token.kind === 'lparen') return this.fail('Subqueries are not supported', token.pos);
    if (token.kind !== 'ident' || token.keyword) return this.unexpected(token);
    if (this.peek().kind === 'lparen') return this.fail(`Table functions are not supported ('${token.value.slice(0, 100)}')`, token.pos);
    const bare = this.peek().kind === 'ident' && !this.peek().keyword ? this.next().value : null;
    return { table: token.value, alias: bare ?? this.optionalAlias(), pos: token.pos };
  }

  /** A LIMIT or OFFSET: a whole number, written or from a placeholder. */
  private count(): { value: number; pos: number } {
    const token = this.peek();
    const expr = this.expression();
    if (expr.kind !== 'literal' || typeof expr.value !== 'number' || !Number.isSafeInteger(expr.value) || expr.value < 0) {
      return this.fail('Expected a whole number', token.pos);
    }
    return { value: expr.value, pos: token.pos };
  }

  private list<T>(item: () => T): T[] {
    const items = [item()];
    while (this.peek().kind === 'comma') {
      this.i++;
      items.push(item());
      if (items.length > LIMITS.expressions) this.fail(`List has more than ${LIMITS.expressions} entries`, this.peek().pos);
    }
    return items;
  }

  private keyword(word: string): void {
    if (!this.acceptKeyword(word)) {
      const token = this.peek();
      if (token.kind === 'eof') this.unexpected(token);
      this.fail(`Expected ${word.toUpperCase()}`, token.pos);
    }
  }

  private acceptPair(first: string, second: string): boolean {
    if (this.peek().keyword !== first) return false;
    this.i++;
    this.keyword(second);
    return true;
  }
}

const isScalar = (v: unknown): v is string | number | boolean | null =>
  v === null || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v)) || (typeof v === 'string' && v.length <= LIMITS.placeholderLength);

/** `values`: each a string, number, boolean or null, or a list of them (for IN). */
export function placeholderValues(values: unknown): Map<string, PlaceholderValue> {
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
