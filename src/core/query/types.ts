import { formatDate, formatInstant, parseIsoInstant } from './dates';
import { at, invalidInput } from './limits';
import type { Dialect } from './dialect';
import { sql, trusted, type SqlFragment } from './sql';

/** The compiler's view of an expression's type; every SQL value it emits has one of these. */
export type ValueType = 'string' | 'json' | 'integer' | 'float' | 'boolean' | 'datetime' | 'date' | 'interval' | 'null';

/** Operator precedence of the emitted SQL, used to parenthesize only where needed. */
export const PREC = { or: 1, and: 2, not: 3, compare: 4, add: 5, mul: 6, unary: 7, atom: 8 } as const;

export interface Typed extends SqlFragment {
  type: ValueType;
  nullable: boolean;
  prec: number;
  /** Contains an aggregate call. */
  aggregate: boolean;
  /** Reads a column outside any aggregate (so it must be grouped when aggregates are selected). */
  columns: boolean;
  /** The value, when the expression is a literal: coercions fold literals in JS instead of SQL. */
  literal?: string | number | boolean | null;
  /** The UTC instant (`YYYY-MM-DD HH:MM:SS.ffffff`) a date or time literal stands for (a date: its midnight). */
  instant?: string;
  /** The events' own time column, unchanged: where a store splits it (Dialect.compareEventTime), compared exactly. */
  eventTime?: boolean;
}

/** Where an expression came from, for error messages: `… at position 3 of where[1]`. */
export interface Site {
  pos: number;
  label: string;
  attr: string;
}

export const fail = (site: Site, what: string): never => {
  throw invalidInput(`${what} ${at(site.pos, site.label)}`, site.attr);
};

export const TYPE_NAMES: Record<ValueType, string> = {
  string: 'String', json: 'JSON', integer: 'Integer', float: 'Float', boolean: 'Boolean',
  datetime: 'DateTime', date: 'Date', interval: 'Interval', null: 'Null',
};

/** A derived expression: inherits aggregate/column flags from its inputs. */
export function derive(fragment: SqlFragment, type: ValueType, from: Typed[], extra: Partial<Typed> = {}): Typed {
  return {
    ...fragment,
    type,
    nullable: from.some((t) => t.nullable),
    prec: PREC.atom,
    aggregate: from.some((t) => t.aggregate),
    columns: from.some((t) => t.columns),
    ...extra,
  };
}

export const paren = (t: Typed, minPrec: number): SqlFragment => (t.prec < minPrec ? sql`(${t})` : t);

export const isNumeric = (t: Typed): boolean => t.type === 'integer' || t.type === 'float';
export const isTemporal = (t: Typed): boolean => t.type === 'datetime' || t.type === 'date';
export const isText = (t: Typed): boolean => t.type === 'string' || t.type === 'json';

/** For arithmetic: DOUBLE never overflows into an error (it becomes NULL), INTEGER/BIGINT do. */
export function asDouble(d: Dialect, t: Typed, site: Site): Typed {
  if (t.type === 'float' || t.type === 'null') return t;
  if (t.type === 'integer' || t.type === 'boolean') return derive(d.toFloat(t), 'float', [t]);
  if (isText(t)) return derive(d.tryFloat(t, t.type), 'float', [t], { nullable: true });
  return fail(site, `Expected a number, got ${TYPE_NAMES[t.type]}`);
}

/** For comparisons with numbers: text that is not a number compares as NULL, never as an error. */
export function asNumber(d: Dialect, t: Typed, site: Site): Typed {
  return isNumeric(t) ? t : asDouble(d, t, site);
}

/**
 * Text to TIMESTAMP (UTC). A literal is parsed here, so a bad date is a 400 with its position; an
 * expression goes through TIMESTAMPTZ so an offset in the text (`+02:00`) is honoured, and TRY_CAST
 * makes unparsable text NULL. (Assumes the connection's TimeZone is UTC, which storage sets.)
 */
export function asDatetime(d: Dialect, t: Typed, site: Site): Typed {
  if (isTemporal(t) || t.type === 'null') return t;
  if (typeof t.literal === 'string') {
    const instant = parseIsoInstant(t.literal);
    if (!instant) return fail(site, `Cannot parse '${t.literal.slice(0, 100)}' as a DateTime`);
    return literalInstant(d, formatInstant(instant), 'datetime');
  }
  if (isText(t)) return derive(d.tryDatetime(t), 'datetime', [t], { nullable: true });
  return fail(site, `Expected a DateTime, got ${TYPE_NAMES[t.type]}`);
}

export function asDate(d: Dialect, t: Typed, site: Site): Typed {
  if (t.type === 'date' || t.type === 'null') return t;
  if (typeof t.literal === 'string') {
    const instant = parseIsoInstant(t.literal);
    if (!instant) return fail(site, `Cannot parse '${t.literal.slice(0, 100)}' as a Date`);
    return literalInstant(d, formatDate(instant), 'date');
  }
  return derive(d.toDate(asDatetime(d, t, site)), 'date', [t]);
}

export function asString(d: Dialect, t: Typed): Typed {
  if (isText(t) || t.type === 'null') return t;
  if (t.literal !== undefined && t.literal !== null) return literal(d, String(t.literal));
  return derive(d.toText(t, t.type), 'string', [t]);
}

export function asBoolean(t: Typed, site: Site): Typed {
  if (t.type === 'boolean') return t;
  return fail(site, `Expected a boolean expression, got ${TYPE_NAMES[t.type]}`);
}

export function literal(d: Dialect, value: string | number | boolean | null, isFloat = false): Typed {
  const base = { prec: PREC.atom, aggregate: false, columns: false, literal: value };
  if (value === null) return { ...trusted('NULL'), ...base, type: 'null', nullable: true };
  const type: ValueType = typeof value === 'string' ? 'string' : typeof value === 'boolean' ? 'boolean'
    : isFloat || !Number.isSafeInteger(value) ? 'float' : 'integer';
  return { ...d.bind(value), ...base, type, nullable: false };
}

/** A bound UTC instant (`YYYY-MM-DD HH:MM:SS.ffffff`) or date (`YYYY-MM-DD`). */
export function literalInstant(d: Dialect, text: string, type: 'datetime' | 'date'): Typed {
  const instant = type === 'date' ? `${text.slice(0, 10)} 00:00:00.000000` : text;
  return { ...d.instant(text, type), type, nullable: false, prec: PREC.atom, aggregate: false, columns: false, instant };
}

/**
 * A predicate's NULL handling, as HogQL defines it: `=` and `<` are false on NULL, `!=`, NOT LIKE
 * and NOT IN are true. In a positive WHERE position (`strict` false) NULL already acts as false,
 * so the plain predicate is kept (it reads better and DuckDB can push it down); elsewhere, and
 * whenever NULL must read as true, it is wrapped in COALESCE.
 */
export function nullSafe(d: Dialect, pred: SqlFragment, nullable: boolean, strict: boolean, whenNull: boolean, from: Typed[]): Typed {
  const base = { type: 'boolean' as const, nullable: false, aggregate: from.some((t) => t.aggregate), columns: from.some((t) => t.columns) };
  if (!nullable || (!strict && !whenNull)) return { ...pred, ...base, prec: PREC.compare };
  return { ...d.nullAs(pred, whenNull), ...base, prec: PREC.atom };
}

/**
 * Brings compared values to one type, as ClickHouse would: a DateTime makes the others DateTimes
 * (text literals parsed here), a number makes text numeric (TRY_CAST, so non-numbers never match),
 * a boolean next to text compares as 'true'/'false'.
 */
export function unify(d: Dialect, values: Typed[], site: Site): Typed[] {
  const typed = values.filter((t) => t.type !== 'null');
  if (typed.some(isTemporal)) {
    const datetimes = values.map((t) => asDatetime(d, t, site));
    if (!datetimes.some((t) => t.type === 'datetime')) return datetimes;
    return datetimes.map((t) => (t.type === 'date' ? derive(d.dateAsDatetime(t), 'datetime', [t], t.instant ? { instant: t.instant } : {}) : t));
  }
  if (typed.some((t) => t.type === 'interval')) {
    const other = typed.find((t) => t.type !== 'interval');
    return other ? fail(site, `Cannot compare Interval with ${TYPE_NAMES[other.type]}`) : values;
  }
  if (typed.some(isNumeric)) return values.map((t) => asNumber(d, t, site));
  if (typed.some((t) => t.type === 'boolean') && typed.some(isText)) return values.map((t) => asString(d, t));
  return values;
}
