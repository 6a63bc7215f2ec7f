/**
 * Lone surrogates: UTF-16 halves without their other half. JSON.parse makes one of a `\uD800`
 * escape that is not half of a pair, and JavaScript keeps it; UTF-8 (what every store keeps text
 * in) cannot write one, and DuckDB's JSON refuses the escape: a value holding one fails every
 * statement that reads it as JSON (a load, a persons flush) until it is gone.
 */

/** A `\uD800`–`\uDFFF` escape in JSON text (raw lone surrogates are another matter: `String.isWellFormed`). */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** Whether JSON text may parse to (or JSON.stringify output may stand for) a value with a lone surrogate. */
export const mayHoldLoneSurrogates = (json: string): boolean => SURROGATE_ESCAPE.test(json);

/**
 * The value with every lone surrogate in its strings and keys replaced by U+FFFD, as UTF-8
 * encoders do. Arrays and objects are changed in place (an object whose keys change is made
 * anew, its keys in the same order).
 */
export function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return value.toWellFormed();
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = wellFormed(value[i]);
    return value;
  }
  if (value === null || typeof value !== 'object') return value;
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o);
  // fromEntries defines own properties, so a `__proto__` key stays a key.
  if (!keys.every((k) => k.isWellFormed())) return Object.fromEntries(keys.map((k) => [k.toWellFormed(), wellFormed(o[k])]));
  for (const k of keys) o[k] = wellFormed(o[k]);
  return o;
}

/** JSON text with its lone surrogates replaced (parsed and written again only when it may hold one). */
export const wellFormedJson = (json: string): string => (mayHoldLoneSurrogates(json) ? JSON.stringify(wellFormed(JSON.parse(json))) : json);

/**
 * `value` as JSON text a store's JSON reader takes. A value holding a lone surrogate is made
 * well-formed first and handed to `keep`, so what memory holds is what gets stored.
 */
export function storableJson<T>(value: T, keep: (fixed: T) => void): string {
  const json = JSON.stringify(value);
  if (!mayHoldLoneSurrogates(json)) return json;
  const fixed = wellFormed(value) as T;
  keep(fixed);
  return JSON.stringify(fixed);
}
