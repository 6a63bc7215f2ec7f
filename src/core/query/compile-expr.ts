import { lookupFunction, resolveField, type TableName } from './catalog';
import type { Dialect } from './dialect';
import { DUCKDB } from './dialect-duckdb';
import { LIMITS } from './limits';
import type { CompareOp, Expr, IntervalUnit } from './parse';
import { joinSql, sql, trusted, type SqlFragment } from './sql';
import {
  asBoolean, asDatetime, asDouble, asString, derive, fail, isTemporal, isText,
  literal, literalInstant, nullSafe, paren, PREC, TYPE_NAMES, unify, type Site, type Typed,
} from './types';

/**
 * Compiles one expression tree to SQL in a dialect (DuckDB unless told). `strict` says whether the
 * result must be an exact boolean (select lists, operands of NOT and of comparisons) or may let
 * NULL stand for false (positive WHERE positions, where it reads better and filters push down).
 * One instance per expression: it carries that expression's interval budget and aggregate nesting.
 */
/** What a statement adds to the names an expression may use. */
export interface NameScope {
  /** The table fields belong to (default `events`). */
  table?: TableName;
  /** Table names and aliases a field may be qualified with (`events.event`, `e.event`). */
  qualifiers?: ReadonlySet<string>;
  /** Select-list aliases, compiled: a bare name refers to its expression. */
  aliases?: ReadonlyMap<string, Typed>;
}

export class ExprCompiler {
  private intervalYears = 0;
  private inAggregate = false;

  constructor(
    private readonly label: string,
    private readonly attr: string,
    private readonly now: Date,
    private readonly names: NameScope = {},
    private readonly d: Dialect = DUCKDB,
  ) {}

  site(node: { pos: number }): Site {
    return { pos: node.pos, label: this.label, attr: this.attr };
  }

  /** A WHERE condition: must be boolean. */
  condition(node: Expr): Typed {
    return asBoolean(this.compile(node, false), this.site(node));
  }

  compile(node: Expr, strict: boolean): Typed {
    switch (node.kind) {
      case 'literal':
        return literal(this.d, node.value, node.isFloat);
      case 'instant':
        return literalInstant(this.d, node.value, node.date ? 'date' : 'datetime');
      case 'field':
        return this.field(node.chain, this.site(node));
      case 'interval':
        return this.interval(node.amount, node.unit, this.site(node));
      case 'call':
        return this.call(node, strict);
      case 'arith':
        return this.arith(node.op, this.compile(node.left, true), this.compile(node.right, true), this.site(node));
      case 'compare':
        return this.compare(node.op, this.compile(node.left, true), this.compile(node.right, true), strict, this.site(node));
      case 'logical':
        return this.logical(node.op, node.operands, strict);
      case 'not': {
        const operand = asBoolean(this.compile(node.operand, true), this.site(node.operand));
        return derive(sql`NOT ${paren(operand, PREC.atom)}`, 'boolean', [operand], { prec: PREC.not, nullable: false });
      }
      case 'neg': {
        const operand = asDouble(this.d, this.compile(node.operand, true), this.site(node.operand));
        return derive(sql`-${paren(operand, PREC.atom)}`, 'float', [operand], { prec: PREC.unary });
      }
      case 'isNull': {
        const operand = this.compile(node.operand, true);
        const op = trusted(node.negated ? 'IS NOT NULL' : 'IS NULL');
        return derive(sql`${paren(operand, PREC.add)} ${op}`, 'boolean', [operand], { prec: PREC.compare, nullable: false });
      }
      case 'in':
        return this.in(node, strict);
      case 'like':
        return this.like(node, strict);
    }
  }

  private field(chain: readonly string[], site: Site): Typed {
    const names = chain.length > 1 && this.names.qualifiers?.has(chain[0] as string) ? chain.slice(1) : chain;
    const alias = names.length === 1 ? this.names.aliases?.get(names[0] as string) : undefined;
    return alias ?? resolveField(this.d, names, site, this.names.table);
  }

  private call(node: Extract<Expr, { kind: 'call' }>, strict: boolean): Typed {
    const site = this.site(node);
    const def = lookupFunction(node.name, site);
    if (node.star && !def.star) return fail(site, `Function '${node.name}' does not accept *`);
    const count = node.args.length;
    if (count < def.minArgs || count > def.maxArgs) {
      const wanted = def.minArgs === def.maxArgs ? `${def.minArgs}` : `${def.minArgs} to ${def.maxArgs}`;
      return fail(site, `Function '${node.name}' takes ${wanted} argument${def.minArgs === 1 && def.maxArgs === 1 ? '' : 's'}, got ${count}`);
    }
    if (def.aggregate && this.inAggregate) return fail(site, 'Aggregate functions cannot be nested');
    const outer = this.inAggregate;
    this.inAggregate = outer || def.aggregate;
    try {
      const args = node.args.map((arg) => this.compile(arg, true));
      // An alias of an aggregate is compiled already: nesting shows only here.
      if (def.aggregate && args.some((a) => a.aggregate)) return fail(site, 'Aggregate functions cannot be nested');
      let result = def.compile(args, { site, now: this.now, dialect: this.d });
      if (def.aggregate) result = { ...result, aggregate: true, columns: false };
      return result.type === 'boolean' && result.nullable ? nullSafe(this.d, result, true, strict, false, [result]) : result;
    } finally {
      this.inAggregate = outer;
    }
  }

  private interval(amount: number, unit: IntervalUnit, site: Site): Typed {
    this.intervalYears += amount * YEARS_PER_UNIT[unit];
    if (this.intervalYears > LIMITS.intervalYears) return fail(site, `Intervals add up to more than ${LIMITS.intervalYears} years`);
    return derive(this.d.interval(amount, unit), 'interval', [], { nullable: false });
  }

  private arith(op: '+' | '-' | '*' | '/' | '%', left: Typed, right: Typed, site: Site): Typed {
    const opSql = trusted(op);
    if (left.type === 'interval' || right.type === 'interval' || isTemporal(left) || isTemporal(right)) {
      return this.temporalArith(op, left, right, site);
    }
    const prec = op === '+' || op === '-' ? PREC.add : PREC.mul;
    const [a, b] = [asDouble(this.d, left, site), asDouble(this.d, right, site)];
    const nullable = a.nullable || b.nullable || op === '/' || op === '%';
    const [l, r] = [paren(a, prec), paren(b, prec + 1)];
    return derive(op === '%' ? this.d.modulo(l, r) : sql`${l} ${opSql} ${r}`, 'float', [a, b], { prec, nullable });
  }

  /** DateTime ± interval, interval ± interval; a text literal next to an interval is read as a DateTime. */
  private temporalArith(op: string, left: Typed, right: Typed, site: Site): Typed {
    const l = right.type === 'interval' && isText(left) ? asDatetime(this.d, left, site) : left;
    const r = left.type === 'interval' && isText(right) && op === '+' ? asDatetime(this.d, right, site) : right;
    const both = (lt: (t: Typed) => boolean, rt: (t: Typed) => boolean) => lt(l) && rt(r);
    const isInterval = (t: Typed) => t.type === 'interval';
    let type: 'datetime' | 'interval' | null = null;
    if ((op === '+' || op === '-') && both(isTemporal, isInterval)) type = 'datetime';
    else if (op === '+' && both(isInterval, isTemporal)) type = 'datetime';
    else if ((op === '+' || op === '-') && both(isInterval, isInterval)) type = 'interval';
    if (!type) return fail(site, `Cannot apply '${op}' to ${TYPE_NAMES[l.type]} and ${TYPE_NAMES[r.type]}`);
    return derive(sql`${paren(l, PREC.add)} ${trusted(op)} ${paren(r, PREC.mul)}`, type, [l, r], { prec: PREC.add });
  }

  compare(op: CompareOp, left: Typed, right: Typed, strict: boolean, site: Site): Typed {
    if ((op === '=' || op === '!=') && (left.type === 'null' || right.type === 'null')) {
      const operand = left.type === 'null' ? right : left;
      const test = trusted(op === '=' ? 'IS NULL' : 'IS NOT NULL');
      return derive(sql`${paren(operand, PREC.add)} ${test}`, 'boolean', [operand], { prec: PREC.compare, nullable: false });
    }
    const [a, b] = unify(this.d, [left, right], site) as [Typed, Typed];
    const from = [a, b];
    const exact = this.eventTimeCompare(op, a, b);
    if (exact) return derive(exact, 'boolean', from, { prec: PREC.atom, nullable: false });
    const [l, r] = [paren(a, PREC.add), paren(b, PREC.add)];
    const nullable = from.some((t) => t.nullable);
    if (op === '=' && from.every((t) => t.nullable)) return nullSafe(this.d, this.d.notDistinct(l, r), false, strict, false, from);
    if (op === '!=') return nullSafe(this.d, nullable ? this.d.distinct(l, r) : sql`${l} <> ${r}`, false, strict, true, from);
    return nullSafe(this.d, sql`${l} ${trusted(op)} ${r}`, nullable, strict, false, from);
  }

  /** The event time against a literal instant, where the dialect needs more than `time op instant` for it to be exact. */
  private eventTimeCompare(op: CompareOp, a: Typed, b: Typed): SqlFragment | null {
    if (!this.d.compareEventTime) return null;
    if (a.eventTime && b.instant !== undefined) return this.d.compareEventTime(op, a, b.instant);
    if (b.eventTime && a.instant !== undefined) return this.d.compareEventTime(FLIPPED[op], b, a.instant);
    return null;
  }

  private logical(op: 'AND' | 'OR', operands: Expr[], strict: boolean): Typed {
    const parts = operands.map((o) => asBoolean(this.compile(o, strict), this.site(o)));
    const prec = op === 'AND' ? PREC.and : PREC.or;
    const joined = joinSql(parts.map((p) => paren(p, prec)), ` ${op} `);
    return derive(joined, 'boolean', parts, { prec, nullable: false });
  }

  private in(node: Extract<Expr, { kind: 'in' }>, strict: boolean): Typed {
    const site = this.site(node);
    const [operand, ...items] = unify(this.d, [this.compile(node.operand, true), ...node.list.map((e) => this.compile(e, true))], site) as [Typed, ...Typed[]];
    const constant = items.every((t) => !t.columns && !t.aggregate);
    const pred = this.d.inList(paren(operand, PREC.add), items, node.negated, constant);
    const all = [operand, ...items];
    return nullSafe(this.d, pred, all.some((t) => t.nullable), strict, node.negated, all);
  }

  /** LIKE keeps ClickHouse's backslash escapes; the pattern must be a literal so it can be checked. */
  private like(node: Extract<Expr, { kind: 'like' }>, strict: boolean): Typed {
    const operand = asString(this.d, this.compile(node.operand, true));
    const pattern = this.compile(node.pattern, true);
    const site = this.site(node.pattern);
    if (typeof pattern.literal !== 'string') return fail(site, 'LIKE needs a string literal as its pattern');
    if (/(^|[^\\])(\\\\)*\\$/.test(pattern.literal)) return fail(site, 'LIKE pattern must not end with a lone backslash');
    const pred = this.d.like(paren(operand, PREC.add), pattern, node.negated, node.caseInsensitive);
    return nullSafe(this.d, pred, operand.nullable, strict, node.negated, [operand]);
  }
}

const FLIPPED: Record<CompareOp, CompareOp> = { '=': '=', '!=': '!=', '<': '>', '<=': '>=', '>': '<', '>=': '<=' };

const YEARS_PER_UNIT: Record<IntervalUnit, number> = {
  second: 1 / 31_536_000, minute: 1 / 525_600, hour: 1 / 8_760, day: 1 / 365, week: 7 / 365, month: 1 / 12, quarter: 1 / 4, year: 1,
};
