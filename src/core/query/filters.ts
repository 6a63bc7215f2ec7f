import { COLUMN_NAMES } from './catalog';
import { ExprCompiler } from './compile-expr';
import type { Dialect } from './dialect';
import { formatInstant, parseIsoInstant, parseRelativeOrIsoDate } from './dates';
import { invalidInput, LIMITS } from './limits';
import { parseExpression, type CompareOp, type Expr } from './parse';
import { checkRe2Syntax } from './regex';
import { joinSql, sql, type SqlFragment } from './sql';
import { PREC, type Typed } from './types';

/** The list endpoint's filter parameters, as strings from the query (properties may be pre-parsed). */
export interface EventFilterParams {
  event?: string | null;
  distinct_id?: string | null;
  person_id?: string | null;
  after?: string | null;
  before?: string | null;
  /** PostHog's property filters: JSON text, or the value already parsed. */
  properties?: unknown;
}

/** PostHog hides events stamped in the future: the default upper bound is now + 5 s. */
const DEFAULT_BEFORE_MS = 5_000;

/**
 * The events list's WHERE conditions (without the team scope, which the caller puts outside):
 * `event`, `distinct_id`, `person_id` exact; `after`/`before` exclusive; `properties` as PostHog's
 * filter list or property group. Each is built as an expression tree and compiled by the same
 * compiler as `where`, so both share one set of NULL and type rules.
 */
export function compileEventFilters(params: EventFilterParams, now: Date, options: { timeBounds?: boolean; dialect?: Dialect } = {}): SqlFragment {
  const parts = eventFilterExprs(params, now, options).map((f) => new ExprCompiler(f.attr, f.attr, now, {}, options.dialect).condition(f.expr));
  return joinSql(parts.map((p) => (p.prec < PREC.and ? sql`(${p})` : p)), ' AND ');
}

/** One condition of the filters, and the parameter it came from (its errors name it). */
export interface FilterExpr {
  expr: Expr;
  attr: string;
}

/** The conditions `compileEventFilters` compiles, as expression trees (an EventsQuery's WHERE entries). */
export function eventFilterExprs(params: EventFilterParams, now: Date, options: { timeBounds?: boolean } = {}): FilterExpr[] {
  const parts: FilterExpr[] = [];
  const add = (expr: Expr | null, attr: string) => {
    if (expr) parts.push({ expr, attr });
  };
  for (const name of ['event', 'distinct_id', 'person_id'] as const) {
    const value = optionalString(params[name], name);
    if (value) add(compare('=', field([name]), { kind: 'literal', value, pos: 0 }), name);
  }
  // Without the bounds (`timeBounds: false`) the conditions hold or fail for a row whatever its
  // time: what a count of rows known to lie inside the bounds needs. The bounds are still parsed,
  // so a bad value is a 400 either way.
  const bounded = options.timeBounds ?? true;
  const after = optionalString(params.after, 'after');
  if (after) {
    const lower = parseRelativeOrIsoDate(after, now, 'after');
    if (bounded) add(compare('>', field(['timestamp']), instant(lower)), 'after');
  }
  const before = optionalString(params.before, 'before');
  const upper = before ? parseRelativeOrIsoDate(before, now, 'before') : formatInstant({ ms: now.getTime() + DEFAULT_BEFORE_MS, us: 0, dateOnly: false });
  if (bounded) add(compare('<', field(['timestamp']), instant(upper)), 'before');
  add(propertiesExpr(params.properties, now), 'properties');
  return parts;
}

/** `orderBy`: a JSON list, `["-timestamp"]` (the default) or `["timestamp"]`. */
export function parseListOrder(value: unknown): 'ASC' | 'DESC' {
  if (value === undefined || value === null || value === '') return 'DESC';
  let parsed: unknown;
  try {
    parsed = typeof value === 'string' ? JSON.parse(value) : value;
  } catch {
    parsed = undefined;
  }
  if (Array.isArray(parsed) && parsed.length === 1 && (parsed[0] === 'timestamp' || parsed[0] === '-timestamp')) {
    return parsed[0] === 'timestamp' ? 'ASC' : 'DESC';
  }
  throw invalidInput('orderBy must be ["-timestamp"] or ["timestamp"]', 'orderBy');
}

/**
 * The `properties` parameter as sent (JSON text in a query string, or already a value): its
 * filters, or undefined when absent. Unparsable text is PostHog's 400.
 */
export function propertiesParam(raw: unknown): unknown {
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw);
  } catch {
    throw invalidInput('Properties are unparsable!', 'properties');
  }
}

function propertiesExpr(raw: unknown, now: Date): Expr | null {
  const value = propertiesParam(raw);
  if (value === undefined) return null;
  return new PropertyFilterBuilder(now).node(value, 'properties', 0);
}

type Scalar = string | number | boolean | null;

const NEGATED: Record<string, string> = {
  exact: 'is_not', is_not: 'exact', icontains: 'not_icontains', not_icontains: 'icontains', regex: 'not_regex',
  not_regex: 'regex', gt: 'lte', lte: 'gt', gte: 'lt', lt: 'gte', is_set: 'is_not_set', is_not_set: 'is_set',
  is_date_before: 'is_date_after', is_date_after: 'is_date_before',
};
const COMPARISONS: Record<string, CompareOp> = { gt: '>', gte: '>=', lt: '<', lte: '<=' };

class PropertyFilterBuilder {
  private count = 0;

  constructor(private readonly now: Date) {}

  /** A filter list (AND), a group `{type: 'AND'|'OR', values}`, or one filter `{key, value, operator, type}`. */
  node(value: unknown, path: string, depth: number): Expr | null {
    if (depth > LIMITS.propertyDepth) throw this.error(path, `property groups are nested more than ${LIMITS.propertyDepth} deep`);
    if (Array.isArray(value)) return this.group('AND', value, path, depth);
    if (!isObject(value)) throw this.error(path, 'expected a list of filters or a property group');
    if (Array.isArray(value.values)) {
      if (value.type !== 'AND' && value.type !== 'OR') throw this.error(path, "a property group's type must be AND or OR");
      return this.group(value.type, value.values, `${path}.values`, depth);
    }
    if (++this.count > LIMITS.propertyFilters) throw this.error(path, `more than ${LIMITS.propertyFilters} property filters`);
    return this.filter(value, path);
  }

  private group(op: 'AND' | 'OR', values: unknown[], path: string, depth: number): Expr | null {
    const operands = values.map((v, i) => this.node(v, `${path}[${i}]`, depth + 1)).filter((e): e is Expr => e !== null);
    if (operands.length <= 1) return operands[0] ?? null;
    return { kind: 'logical', op, operands, pos: 0 };
  }

  private filter(f: Record<string, unknown>, path: string): Expr | null {
    const type = f.type ?? 'event';
    if (typeof f.key !== 'string') throw this.error(path, "a filter needs a string 'key'");
    if (type === 'hogql') {
      const expr = parseExpression(f.key, `${path}.key`, 'properties');
      // Compiled here once for its errors, so they name this filter (the real compile names only `properties`).
      new ExprCompiler(`${path}.key`, 'properties', this.now).condition(expr);
      return expr;
    }
    const given = f.operator ?? 'exact';
    if (typeof given !== 'string') throw this.error(path, "'operator' must be a string");
    const operator = f.negation === true ? (NEGATED[given] ?? given) : given;
    const target = this.target(type, f.key, path);
    const values = this.values(f.value, path);
    return this.operatorExpr(operator, target, values, f.key, path);
  }

  private target(type: unknown, key: string, path: string): Expr {
    if (type === 'event') return field(['properties', key]);
    if (type === 'person') return field(['person', 'properties', key]);
    if (type === 'event_metadata' && COLUMN_NAMES.includes(key)) return field([key]);
    if (type === 'event_metadata') throw this.error(path, `unknown event field '${key.slice(0, 100)}'`);
    throw this.error(path, `property filter type '${String(type).slice(0, 50)}' is not supported`);
  }

  private values(value: unknown, path: string): Scalar[] {
    // A missing value is null (Python's None), as in PostHog: `exact` then means "is not set".
    const list = Array.isArray(value) ? value : [value ?? null];
    if (list.length > LIMITS.listValues) throw this.error(path, `more than ${LIMITS.listValues} values`);
    for (const v of list) {
      if (v !== null && !['string', 'number', 'boolean'].includes(typeof v)) throw this.error(path, 'values must be strings, numbers or booleans');
      if (typeof v === 'number' && !Number.isFinite(v)) throw this.error(path, 'values must be finite numbers');
    }
    return list as Scalar[];
  }

  private operatorExpr(operator: string, target: Expr, values: Scalar[], key: string, path: string): Expr | null {
    const text = (v: Scalar): Expr => ({ kind: 'literal', value: String(v), pos: 0 });
    const some = (build: (v: Scalar) => Expr, op: 'AND' | 'OR' = 'OR'): Expr | null =>
      values.length === 0 ? null : values.length === 1 ? build(values[0] as Scalar) : { kind: 'logical', op, operands: values.map(build), pos: 0 };
    switch (operator) {
      case 'exact':
      case 'is_not': {
        const negated = operator === 'is_not';
        if (values.length === 1 && values[0] === null) return { kind: 'isNull', negated, operand: target, pos: 0 };
        if (values.includes(null)) throw this.error(path, 'a value list cannot contain null');
        if (values.length === 1) return compare(negated ? '!=' : '=', target, text(values[0] as Scalar));
        return values.length ? { kind: 'in', negated, operand: target, list: values.map(text), pos: 0 } : null;
      }
      case 'icontains':
      case 'not_icontains': {
        const negated = operator === 'not_icontains';
        const like = (v: Scalar): Expr => ({ kind: 'like', negated, caseInsensitive: true, operand: target, pattern: { kind: 'literal', value: `%${escapeLike(this.text(v, path))}%`, pos: 0 }, pos: 0 });
        return some(like, negated ? 'AND' : 'OR');
      }
      case 'regex':
      case 'not_regex': {
        const match = (v: Scalar): Expr => {
          const pattern = this.text(v, path);
          const problem = checkRe2Syntax(pattern);
          if (problem) throw this.error(path, `invalid regular expression for '${key.slice(0, 100)}' (${problem})`);
          const call: Expr = { kind: 'call', name: 'match', args: [target, { kind: 'literal', value: pattern, pos: 0 }], star: false, pos: 0 };
          return operator === 'regex' ? call : { kind: 'not', operand: call, pos: 0 };
        };
        return some(match, operator === 'regex' ? 'OR' : 'AND');
      }
      case 'gt':
      case 'gte':
      case 'lt':
      case 'lte':
        return some((v) => compare(COMPARISONS[operator] as CompareOp, target, { kind: 'literal', value: this.number(v, path), pos: 0 }));
      case 'is_set':
      case 'is_not_set':
        return { kind: 'isNull', negated: operator === 'is_set', operand: target, pos: 0 };
      case 'is_date_before':
      case 'is_date_after':
      case 'is_date_exact':
        return some((v) => this.dateCompare(operator, target, this.text(v, path)));
      default:
        throw this.error(path, `operator '${operator.slice(0, 50)}' is not supported`);
    }
  }

  /** Dates compare as instants; `is_date_exact` with a bare date compares whole days. */
  private dateCompare(operator: string, target: Expr, value: string): Expr {
    const when = instant(parseRelativeOrIsoDate(value, this.now, 'properties'));
    const call = (name: string): Expr => ({ kind: 'call', name, args: [target], star: false, pos: 0 });
    if (operator === 'is_date_exact' && parseIsoInstant(value)?.dateOnly) {
      return compare('=', call('toDate'), { kind: 'instant', value: when.value.slice(0, 10), date: true, pos: 0 });
    }
    return compare(operator === 'is_date_before' ? '<' : operator === 'is_date_after' ? '>' : '=', call('toDateTime'), when);
  }

  private text(v: Scalar, path: string): string {
    if (v === null) throw this.error(path, 'this operator needs a value');
    return String(v);
  }

  private number(v: Scalar, path: string): number {
    const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
    if (!Number.isFinite(n)) throw this.error(path, `'${String(v).slice(0, 50)}' is not a number`);
    return n;
  }

  private error(path: string, what: string) {
    return invalidInput(`Invalid property filter at ${path}: ${what}`, 'properties');
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const field = (chain: string[]): Expr => ({ kind: 'field', chain, pos: 0 });
const compare = (op: CompareOp, left: Expr, right: Expr): Expr => ({ kind: 'compare', op, left, right, pos: 0 });
const instant = (value: string): Extract<Expr, { kind: 'instant' }> => ({ kind: 'instant', value, date: false, pos: 0 });
/** icontains is a substring test: `%` and `_` in the value are literal characters. */
const escapeLike = (s: string): string => s.replace(/[\\%_]/g, '\\$&');

function optionalString(value: unknown, attr: string): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string') throw invalidInput(`${attr} must be a string`, attr);
  return value;
}
