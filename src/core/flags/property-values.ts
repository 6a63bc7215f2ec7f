/**
 * How the flags service reads JSON values when it compares them: strings as they are, anything
 * else as its compact JSON text (so `true` is "true", null is "null", 5 is "5").
 */

const sortObjectKeys = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(sortObjectKeys);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries.map(([key, inner]) => [key, sortObjectKeys(inner)]));
};

/** serde_json keeps object keys sorted, so objects are compared by their sorted-key text. */
export const toStringRepresentation = (value: unknown): string => {
  if (typeof value === 'string') return value;
  if (value === undefined) return 'null';
  return JSON.stringify(sortObjectKeys(value)) ?? 'null';
};

/** Rust's `str::parse::<f64>` grammar: no whitespace, no hex, but `inf` and `nan` are numbers. */
const FLOAT_TEXT = /^[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf|infinity|nan)$/i;

export const parseNumber = (value: unknown): number | null => {
  if (typeof value === 'number') return value;
  const text = toStringRepresentation(value);
  if (!FLOAT_TEXT.test(text)) return null;
  const lower = text.toLowerCase().replace(/^\+/, '');
  if (lower.endsWith('nan')) return Number.NaN;
  if (lower.endsWith('inf') || lower.endsWith('infinity')) {
    return lower.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
  }
  return Number(lower);
};

/**
 * Lowercasing never shortens text and no non-ASCII letter lowercases to one of these, so only
 * texts of their lengths need lowercasing (most compared values are neither).
 */
export const isTruthyOrFalsy = (value: unknown): boolean => {
  if (typeof value === 'boolean') return true;
  if (typeof value === 'string') return (value.length === 4 || value.length === 5) && ['true', 'false'].includes(value.toLowerCase());
  return Array.isArray(value) && value.every(isTruthyOrFalsy);
};

export const isTruthy = (value: unknown): boolean => {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string') return value.length === 4 && value.toLowerCase() === 'true';
  return Array.isArray(value) && value.every(isTruthy);
};

/** The service lowercases ASCII only, so "É" and "é" stay different. */
export const asciiLowercase = (text: string): string =>
  /^[\x00-\x7f]*$/.test(text) ? text.toLowerCase() : text.replace(/[A-Z]/g, (char) => char.toLowerCase());
