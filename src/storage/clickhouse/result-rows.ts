/**
 * Statement results as the rest of storage reads them (DuckDB's shapes): times and days as
 * `Date`, integers and floats as numbers, NULL as null, text as text. They arrive as
 * `TabSeparatedWithNamesAndTypes`, the one streamed format that carries the column types on
 * 18.16 as on a modern server (JSONCompactEachRowWithNamesAndTypes is not on 18.16), so each
 * value is read by its column's type rather than guessed from its text.
 */

const UNESCAPES: Record<string, string> = { b: '\b', f: '\f', r: '\r', n: '\n', t: '\t', '0': '\0', "'": "'", '\\': '\\', '"': '"' };

/** A TabSeparated field's text: ClickHouse writes a backslash before the characters that would break the line. */
export const unescapeField = (text: string): string => (text.includes('\\') ? text.replace(/\\(.)/g, (_, c: string) => UNESCAPES[c] ?? c) : text);

/** `YYYY-MM-DD hh:mm:ss[.ffffff]` (UTC: every time column and expression names the zone) as a Date of its millisecond. */
function utcDateTime(text: string): Date {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?)?$/.exec(text);
  if (!m) return new Date(Number.NaN);
  const ms = m[7] ? Number(m[7].slice(0, 3).padEnd(3, '0')) : 0;
  return new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0), ms));
}

const FLOATS: Record<string, number> = { nan: Number.NaN, '-nan': Number.NaN, inf: Number.POSITIVE_INFINITY, '+inf': Number.POSITIVE_INFINITY, '-inf': Number.NEGATIVE_INFINITY };

/** How a field of the type is read. Types the compilers never produce (arrays, tuples) stay text. */
export function fieldReader(type: string): (text: string) => unknown {
  const wrapped = /^(Nullable|LowCardinality)\((.*)\)$/.exec(type);
  if (wrapped) {
    const inner = fieldReader(wrapped[2]!);
    return wrapped[1] === 'Nullable' ? (t) => (t === '\\N' ? null : inner(t)) : inner;
  }
  if (type === 'Nothing') return () => null;
  if (/^U?Int\d+$|^Decimal|^Interval/.test(type)) return Number;
  if (/^Float\d+$/.test(type)) return (t) => FLOATS[t] ?? Number(t);
  if (/^(DateTime|DateTime64|Date|Date32)\b/.test(type)) return utcDateTime;
  if (type === 'Bool') return (t) => t === 'true';
  return unescapeField;
}

/**
 * Reads rows of `TabSeparatedWithNamesAndTypes`, one line each: the first line names the
 * columns, the second types them. A line whose fields do not match the header (an error the
 * server wrote into a body already under way) throws.
 */
export class TabSeparatedReader {
  private names: string[] | null = null;
  private readers: Array<(text: string) => unknown> | null = null;

  /** The row of a line, or null for the two header lines. */
  read(line: string): Record<string, unknown> | null {
    const fields = line.split('\t');
    if (!this.names) {
      this.names = fields.map(unescapeField);
      return null;
    }
    if (!this.readers) {
      this.readers = fields.map((t) => fieldReader(unescapeField(t)));
      return null;
    }
    if (fields.length !== this.names.length) throw new Error(`a result line has ${fields.length} fields, not ${this.names.length}: ${line.slice(0, 200)}`);
    const row: Record<string, unknown> = {};
    for (let i = 0; i < fields.length; i++) row[this.names[i]!] = this.readers[i]!(fields[i]!);
    return row;
  }
}
