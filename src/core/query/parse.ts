import { at, invalidInput, LIMITS } from './limits';
import type { CompareOp, Expr, IntervalUnit, ParsedSelect } from './ast';
import { RESERVED, tokenize, type Token, type TokenizeOptions } from './tokenize';

export type { CompareOp, Expr, IntervalUnit, ParsedSelect } from './ast';

const COMPARE_OPS: Record<string, CompareOp> = { '=': '=', '==': '=', '!=': '!=', '<>': '!=', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };
const INTERVAL_UNITS = new Set<IntervalUnit>(['second', 'minute', 'hour', 'day', 'week', 'month', 'quarter', 'year']);

/** Parse one `where` entry (or any boolean/scalar expression). */
export function parseExpression(source: string, label: string, attr: string, options?: TokenizeOptions): Expr {
  const parser = new Parser(tokenize(source, label, attr, options), label, attr);
  const expr = parser.expression();
  parser.expectEnd();
  return expr;
}

/** Parse one `select` entry: an expression with an optional `AS alias`. */
export function parseSelectExpression(source: string, label: string, attr: string, options?: TokenizeOptions): ParsedSelect {
  const parser = new Parser(tokenize(source, label, attr, options), label, attr);
  const expr = parser.expression();
  const alias = parser.optionalAlias();
  parser.expectEnd();
  return { expr, alias };
}

/** Parse one `orderBy` entry: an expression, then ASC or DESC (ASC when neither). */
export function parseOrderExpression(source: string, label: string, attr: string, options?: TokenizeOptions): { expr: Expr; descending: boolean } {
  const parser = new Parser(tokenize(source, label, attr, options), label, attr);
  const expr = parser.expression();
  const descending = parser.optionalDirection();
  parser.expectEnd();
  return { expr, descending };
}

/** A `{name}` placeholder's value (the query endpoint's `values`); a list only after IN. */
export type PlaceholderValue = string | number | boolean | null | ReadonlyArray<string | number | boolean | null>;

export class Parser {
  protected i = 0;
  private depth = 0;
  private readonly depths = new WeakMap<Expr, number>();

  constructor(
    protected readonly tokens: Token[],
    protected readonly label: string,
    protected readonly attr: string,
    /** Values of `{name}` placeholders; their tokens exist only in statements. */
    private readonly values: ReadonlyMap<string, PlaceholderValue> = new Map(),
  ) {}

  expression(): Expr {
    return this.nested(() => this.or());
  }

  optionalAlias(): string | null {
    if (this.peek().keyword !== 'as') return null;
    this.i++;
    const token = this.next();
    if ((token.kind === 'ident' && !token.keyword) || token.kind === 'quoted') return token.value;
    return this.unexpected(token);
  }

  /** `ASC` or `DESC` after an ORDER BY expression (plain words here, not keywords); true for DESC. */
  optionalDirection(): boolean {
    const token = this.peek();
    const word = token.kind === 'ident' && !token.keyword ? token.value.toLowerCase() : '';
    if (word === 'asc' || word === 'desc') this.i++;
    return word === 'desc';
  }

  expectEnd(): void {
    const token = this.peek();
    if (token.kind !== 'eof') this.unexpected(token);
  }

  private or(): Expr {
    return this.logical('OR', 'or', () => this.and());
  }

  private and(): Expr {
    return this.logical('AND', 'and', () => this.not());
  }

  /** AND/OR chains become one n-ary node, so a long chain adds no depth. */
  private logical(op: 'AND' | 'OR', keyword: string, operand: () => Expr): Expr {
    const first = operand();
    const operands = [first];
    while (this.peek().keyword === keyword) {
      this.i++;
      operands.push(operand());
    }
    return operands.length === 1 ? first : this.node({ kind: 'logical', op, operands, pos: first.pos }, operands);
  }

  private not(): Expr {
    const token = this.peek();
    if (token.keyword !== 'not') return this.comparison();
    this.i++;
    const operand = this.nested(() => this.not());
    return this.node({ kind: 'not', operand, pos: token.pos }, [operand]);
  }

  private comparison(): Expr {
    const left = this.additive();
    const token = this.peek();
    const op = token.kind === 'op' ? COMPARE_OPS[token.value] : undefined;
    if (op) {
      this.i++;
      const right = this.additive();
      return this.node({ kind: 'compare', op, left, right, pos: token.pos }, [left, right]);
    }
    if (token.keyword === 'is') {
      this.i++;
      const negated = this.acceptKeyword('not');
      this.expectKeyword('null');
      return this.node({ kind: 'isNull', negated, operand: left, pos: token.pos }, [left]);
    }
    const negated = token.keyword === 'not' && ['like', 'ilike', 'in'].includes(this.peek(1).keyword ?? '');
    if (negated) this.i++;
    const keyword = this.peek().keyword;
    if (keyword === 'like' || keyword === 'ilike') {
      this.i++;
      const pattern = this.additive();
      return this.node({ kind: 'like', negated, caseInsensitive: keyword === 'ilike', operand: left, pattern, pos: token.pos }, [left, pattern]);
    }
    if (keyword === 'in') {
      this.i++;
      const list = this.peek().kind === 'placeholder' ? this.placeholderList(this.next()) : this.parenthesizedList();
      return this.node({ kind: 'in', negated, operand: left, list, pos: token.pos }, [left, ...list]);
    }
    return left;
  }

  private additive(): Expr {
    let left = this.multiplicative();
    for (let t = this.peek(); t.kind === 'op' && (t.value === '+' || t.value === '-'); t = this.peek()) {
      this.i++;
      const right = this.multiplicative();
      left = this.node({ kind: 'arith', op: t.value, left, right, pos: t.pos }, [left, right]);
    }
    return left;
  }

  private multiplicative(): Expr {
    let left = this.unary();
    for (let t = this.peek(); t.kind === 'op' && (t.value === '*' || t.value === '/' || t.value === '%'); t = this.peek()) {
      this.i++;
      const right = this.unary();
      left = this.node({ kind: 'arith', op: t.value, left, right, pos: t.pos }, [left, right]);
    }
    return left;
  }

  private unary(): Expr {
    const token = this.peek();
    if (token.kind === 'op' && (token.value === '-' || token.value === '+')) {
      this.i++;
      const operand = this.nested(() => this.unary());
      if (token.value === '+') return operand;
      if (operand.kind === 'literal' && typeof operand.value === 'number') return { ...operand, value: -operand.value, pos: token.pos };
      return this.node({ kind: 'neg', operand, pos: token.pos }, [operand]);
    }
    return this.primary();
  }

  private primary(): Expr {
    const token = this.next();
    switch (token.kind) {
      case 'number':
        return this.number(token);
      case 'string':
        return { kind: 'literal', value: token.value, pos: token.pos };
      case 'lparen': {
        const inner = this.expression();
        this.expect('rparen');
        return inner;
      }
      case 'quoted':
        return this.fieldChain(token);
      case 'ident':
        return this.identifier(token);
      case 'placeholder': {
        const value = this.placeholder(token);
        return Array.isArray(value) ? this.fail(`Placeholder {${token.value}} is a list: only IN takes one`, token.pos) : this.constant(value as string | number | boolean | null, token.pos);
      }
      default:
        return this.unexpected(token);
    }
  }

  /** A placeholder's value, as a literal: it is bound like any literal, never spliced. */
  private placeholder(token: Token): PlaceholderValue {
    if (!this.values.has(token.value)) this.fail(`Placeholder {${token.value}} has no value in values`, token.pos);
    return this.values.get(token.value) as PlaceholderValue;
  }

  private constant(value: string | number | boolean | null, pos: number): Expr {
    return { kind: 'literal', value, isFloat: typeof value === 'number' && !Number.isInteger(value), pos };
  }

  /** `x IN {list}`: each value of the list a literal. */
  private placeholderList(token: Token): Expr[] {
    const value = this.placeholder(token);
    const list = (Array.isArray(value) ? value : [value]).map((v) => this.constant(v, token.pos));
    if (list.length === 0) this.fail(`Placeholder {${token.value}} is an empty list`, token.pos);
    if (list.length > LIMITS.listValues) this.fail(`List has more than ${LIMITS.listValues} values`, token.pos);
    return list;
  }

  private identifier(token: Token): Expr {
    switch (token.keyword) {
      case undefined:
        return this.peek().kind === 'lparen' ? this.call(token) : this.fieldChain(token);
      case 'true':
      case 'false':
        return { kind: 'literal', value: token.keyword === 'true', pos: token.pos };
      case 'null':
        return { kind: 'literal', value: null, pos: token.pos };
      case 'interval':
        return this.interval(token);
      default:
        if (RESERVED.has(token.keyword)) this.fail(`Unsupported keyword '${token.value.toUpperCase()}'`, token.pos);
        return this.unexpected(token);
    }
  }

  private call(name: Token): Expr {
    this.expect('lparen');
    if (this.peek().kind === 'op' && this.peek().value === '*' && this.peek(1).kind === 'rparen') {
      this.i += 2;
      return { kind: 'call', name: name.value, args: [], star: true, pos: name.pos };
    }
    const args = this.peek().kind === 'rparen' ? [] : this.expressionList();
    this.expect('rparen');
    return this.node({ kind: 'call', name: name.value, args, star: false, pos: name.pos }, args);
  }

  /** `a.b.c`, where parts after a dot may be any word, a quoted name or an integer. */
  private fieldChain(first: Token): Expr {
    const chain = [first.value];
    while (this.peek().kind === 'dot') {
      this.i++;
      const part = this.next();
      if (part.kind === 'ident' || part.kind === 'quoted' || (part.kind === 'number' && /^\d+$/.test(part.value))) {
        chain.push(part.value);
      } else {
        this.unexpected(part);
      }
    }
    return { kind: 'field', chain, pos: first.pos };
  }

  private interval(token: Token): Expr {
    const amount = this.next();
    if (amount.kind !== 'number' || !/^\d+$/.test(amount.value)) return this.unexpected(amount);
    const unitToken = this.next();
    const unit = unitToken.kind === 'ident' ? unitToken.value.toLowerCase().replace(/s$/, '') : '';
    if (!INTERVAL_UNITS.has(unit as IntervalUnit)) this.fail(`Unknown interval unit '${unitToken.value}'`, unitToken.pos);
    return { kind: 'interval', amount: Number(amount.value), unit: unit as IntervalUnit, pos: token.pos };
  }

  private number(token: Token): Expr {
    const value = Number(token.value);
    if (!Number.isFinite(value)) this.fail(`Number out of range '${token.value}'`, token.pos);
    return { kind: 'literal', value, isFloat: /[.eE]/.test(token.value), pos: token.pos };
  }

  private parenthesizedList(): Expr[] {
    this.expect('lparen');
    const list = this.expressionList();
    this.expect('rparen');
    if (list.length > LIMITS.listValues) this.fail(`List has more than ${LIMITS.listValues} values`, list[0]?.pos ?? 0);
    return list;
  }

  protected expressionList(): Expr[] {
    const list = [this.expression()];
    while (this.peek().kind === 'comma') {
      this.i++;
      list.push(this.expression());
    }
    return list;
  }

  /**
   * Records a node's depth. Left-leaning chains (`1 + 1 + …`) deepen the tree without recursing
   * here, and DuckDB's planner slows down sharply on deep expression trees, so the tree's depth is
   * capped as well as the parser's recursion.
   */
  private node<T extends Expr>(expr: T, children: Expr[]): T {
    const depth = 1 + Math.max(0, ...children.map((c) => this.depths.get(c) ?? 1));
    if (depth > LIMITS.nesting) this.fail('Expression is nested too deeply', expr.pos);
    this.depths.set(expr, depth);
    return expr;
  }

  /** Guards every recursive descent, so hostile nesting is a 400 and never a stack overflow. */
  private nested<T>(parse: () => T): T {
    if (++this.depth > LIMITS.nesting) this.fail('Expression is nested too deeply', this.peek().pos);
    try {
      return parse();
    } finally {
      this.depth--;
    }
  }

  protected peek(offset = 0): Token {
    return this.tokens[Math.min(this.i + offset, this.tokens.length - 1)] as Token;
  }

  protected next(): Token {
    const token = this.peek();
    if (token.kind !== 'eof') this.i++;
    return token;
  }

  protected acceptKeyword(keyword: string): boolean {
    if (this.peek().keyword !== keyword) return false;
    this.i++;
    return true;
  }

  protected expectKeyword(keyword: string): void {
    if (!this.acceptKeyword(keyword)) this.unexpected(this.peek());
  }

  protected expect(kind: Token['kind']): void {
    const token = this.next();
    if (token.kind !== kind) this.unexpected(token);
  }

  protected unexpected(token: Token): never {
    if (token.kind === 'eof') return this.fail('Unexpected end of expression', token.pos);
    if (token.keyword && RESERVED.has(token.keyword)) return this.fail(`Unsupported keyword '${token.value.toUpperCase()}'`, token.pos);
    const text = token.kind === 'string' ? `'${token.value}'` : token.value;
    return this.fail(`Unexpected token '${text.length > 30 ? `${text.slice(0, 30)}…` : text}'`, token.pos);
  }

  protected fail(what: string, pos: number): never {
    throw invalidInput(`${what} ${at(pos, this.label)}`, this.attr);
  }
}
