import { AppError } from '../../errors';
import type { ClickHouseFeatures } from './features';

/** The ClickHouse types a bound value takes. */
export type ChType = 'String' | 'Int64' | 'Float64';

/** A statement and its bound values (`query_params`; empty where the values are literals in it). */
export interface ChStatement {
  sql: string;
  params: Record<string, string | number>;
}

/**
 * Builds one statement's values: `bind` gives a typed placeholder (`{p0:String}`) for the
 * server to fill, or — on a server without query parameters (18.16) — the value as a literal
 * escaped by ClickHouse's rules. Every value reaches the statement through here.
 */
export class ChParams {
  private readonly values: Record<string, string | number> = {};
  private next = 0;

  constructor(private readonly features: Pick<ClickHouseFeatures, 'queryParams'>) {}

  bind(value: string | number, type: ChType): string {
    checkValue(value, type);
    if (!this.features.queryParams) return chLiteral(value, type);
    const name = `p${this.next++}`;
    this.values[name] = value;
    return `{${name}:${type}}`;
  }

  statement(sql: string): ChStatement {
    return { sql, params: { ...this.values } };
  }
}

function checkValue(value: string | number, type: ChType) {
  const ok = type === 'String' ? typeof value === 'string' : type === 'Int64' ? Number.isSafeInteger(value) : typeof value === 'number' && Number.isFinite(value);
  if (!ok) throw new AppError('invalid_input', `Not a ${type} value.`);
}

/**
 * A value as a ClickHouse literal. In a quoted string ClickHouse reads backslash escapes, so a
 * backslash is doubled and a quote escaped with one; every other character stands for itself.
 */
export function chLiteral(value: string | number, type: ChType): string {
  checkValue(value, type);
  if (type !== 'String') return String(value);
  return `'${(value as string).replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}
