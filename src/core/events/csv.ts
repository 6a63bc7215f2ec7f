/**
 * RFC 4180 CSV: fields are quoted when they hold a comma, a quote, CR or LF (quotes doubled),
 * records end with CRLF. `null`/`undefined` are empty fields; objects and arrays are written as
 * their JSON text; booleans as `true`/`false` (JSON's spelling, not Python's `True`).
 */
const NEEDS_QUOTES = /[",\r\n]/;

export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export const CSV_NEWLINE = '\r\n';

/**
 * A text field as DuckDB's CSV writer writes it (COPY … FORMAT csv), for fields spliced into its
 * output: null is empty; an empty string, or one holding a comma, quote, CR, LF or `#` (its
 * comment character), is quoted.
 */
export function duckdbCsvField(value: string | null): string {
  if (value === null) return '';
  return value === '' || /[",\r\n#]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

export function csvRecord(values: readonly unknown[]): string {
  let out = '';
  for (let i = 0; i < values.length; i++) out += (i ? ',' : '') + csvField(values[i]);
  return out + CSV_NEWLINE;
}

/**
 * The header of an events export, as PostHog's CSV renderer builds it: the sorted union of the
 * flattened keys (`properties.$browser`, `person.distinct_ids.0`). Property keys are flattened
 * one level deep: a nested object or list stays one column holding its JSON text, since a
 * streamed export must fix its header before it has read the rows.
 */
export const EVENT_CSV_FIXED_COLUMNS = ['distinct_id', 'elements_chain', 'event', 'id', 'timestamp'] as const;
export const EVENT_CSV_PERSON_COLUMNS = [
  'person.distinct_ids.0',
  'person.is_identified',
  'person.properties.email',
  'person.properties.name',
  'person.properties.username',
] as const;

export type EventCsvColumn =
  | { kind: 'fixed'; name: (typeof EVENT_CSV_FIXED_COLUMNS)[number] }
  | { kind: 'person'; name: (typeof EVENT_CSV_PERSON_COLUMNS)[number] }
  | { kind: 'property'; name: string; key: string };

/** Code-unit order, as Python's `sorted` gives for the header. */
const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

export function eventCsvColumns(propertyKeys: Iterable<string>): EventCsvColumn[] {
  const columns: EventCsvColumn[] = [
    ...EVENT_CSV_FIXED_COLUMNS.map((name) => ({ kind: 'fixed' as const, name })),
    ...EVENT_CSV_PERSON_COLUMNS.map((name) => ({ kind: 'person' as const, name })),
    ...[...new Set(propertyKeys)].map((key) => ({ kind: 'property' as const, name: `properties.${key}`, key })),
  ];
  return columns.sort(byName);
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const CR = 0x0d;
const LF = 0x0a;

/**
 * Insert text into every complete record at the start of `chunk`, a piece of an RFC 4180 CSV
 * stream as DuckDB writes it (fields quoted when needed, quotes doubled, records ending in CRLF),
 * right after each record's first `after` fields: `insert(first)` gets the record's first field,
 * unquoted, and returns the bytes to put there (starting with a comma). Returns the spliced
 * bytes and how many bytes of `chunk` they cover: a record the chunk cuts is left for the next
 * call, which starts there. Used to put the person columns into an export DuckDB wrote without
 * them.
 */
export function spliceCsvRecords(chunk: Uint8Array, after: number, insert: (first: string) => Uint8Array): { bytes: Buffer; consumed: number } {
  if (after < 1) throw new Error('the splice point must follow a field');
  const b = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  const scan = new Scanner(b);
  let out = Buffer.allocUnsafe(b.length + (b.length >> 3) + 256);
  let o = 0;
  let at = 0; // start of the next record
  let copied = 0; // input before this is in `out`
  for (;;) {
    const firstEnd = scan.fieldEnd(at);
    if (firstEnd < 0) break;
    let cut = firstEnd;
    for (let i = 1; i < after && cut >= 0; i++) {
      if (b[cut] !== COMMA) throw new Error(`a CSV record has fewer than ${after} fields`);
      cut = scan.fieldEnd(cut + 1);
    }
    if (cut < 0) break;
    const end = scan.recordEnd(cut);
    if (end < 0) break;
    const first = b[at] === QUOTE ? b.toString('utf8', at + 1, firstEnd - 1).replaceAll('""', '"') : b.toString('utf8', at, firstEnd);
    const text = insert(first);
    const need = o + (cut - copied) + text.length + (b.length - cut);
    if (need > out.length) {
      const bigger = Buffer.allocUnsafe(need + (need >> 2));
      out.copy(bigger, 0, 0, o);
      out = bigger;
    }
    o += b.copy(out, o, copied, cut);
    out.set(text, o);
    o += text.length;
    copied = cut;
    at = end;
  }
  o += b.copy(out, o, copied, at);
  return { bytes: out.subarray(0, o), consumed: at };
}

/**
 * Field and record ends in one buffer, for positions that only move forward: the next quote and
 * CR/LF positions are remembered, so text without them is searched once, not once per record.
 */
class Scanner {
  private quote = -2;
  private cr = -2;
  private lf = -2;

  constructor(private readonly b: Buffer) {}

  private next(which: 'quote' | 'cr' | 'lf', byte: number, from: number): number {
    let at = this[which];
    if (at === -2 || (at !== -1 && at < from)) {
      at = this.b.indexOf(byte, from);
      this[which] = at;
    }
    return at;
  }

  /** The index of the closing quote's successor for the quoted field opening at `open`, or -1. */
  private quotedEnd(open: number): number {
    let from = open + 1;
    for (;;) {
      const q = this.next('quote', QUOTE, from);
      if (q < 0 || q + 1 >= this.b.length) return -1;
      if (this.b[q + 1] !== QUOTE) return q + 1;
      from = q + 2;
    }
  }

  /** The index just past the field starting at `at` (a comma or CR follows), or -1 if it is cut. */
  fieldEnd(at: number): number {
    if (at >= this.b.length) return -1;
    if (this.b[at] === QUOTE) return this.quotedEnd(at);
    const comma = this.b.indexOf(COMMA, at);
    const cr = this.next('cr', CR, at);
    if (cr < 0) return comma;
    return comma >= 0 && comma < cr ? comma : cr;
  }

  /** The index just past the CRLF ending the record whose unquoted text resumes at `at`, or -1. */
  recordEnd(at: number): number {
    let from = at;
    for (;;) {
      const lf = this.next('lf', LF, from);
      if (lf < 0) return -1;
      const q = this.next('quote', QUOTE, from);
      if (q < 0 || lf < q) return lf + 1;
      const end = this.quotedEnd(q);
      if (end < 0) return -1;
      from = end;
    }
  }
}

/**
 * The top-level members of a JSON object's text, each value as its own text (not parsed: a
 * nested object keeps its keys in their order, which parsing would change for integer-like
 * keys). Anything but an object has none.
 */
export function jsonObjectMembers(text: string): Map<string, string> {
  const members = new Map<string, string>();
  let i = skipSpace(text, 0);
  if (text[i] !== '{') return members;
  i = skipSpace(text, i + 1);
  while (i < text.length && text[i] !== '}') {
    const keyEnd = jsonValueEnd(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    const start = skipSpace(text, skipSpace(text, keyEnd) + 1);
    const end = jsonValueEnd(text, start);
    if (!members.has(key)) members.set(key, text.slice(start, end).trimEnd());
    i = skipSpace(text, end);
    if (text[i] === ',') i = skipSpace(text, i + 1);
  }
  return members;
}

const SPACE = /\s/;
const skipSpace = (text: string, i: number): number => {
  while (i < text.length && SPACE.test(text[i] as string)) i++;
  return i;
};

/** Where the JSON value starting at `i` ends (for a scalar: at the next `,`, `}` or `]` outside a string). */
function jsonValueEnd(text: string, i: number): number {
  let depth = 0;
  let inString = false;
  for (; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') {
        inString = false;
        if (depth === 0) return i + 1;
      }
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      if (depth === 0) return i;
      if (--depth === 0) return i + 1;
    } else if (c === ',' && depth === 0) return i;
  }
  return i;
}

/**
 * What DuckDB's `json_extract_string` gives for a member's JSON text (CSV exports' property
 * columns): a string unquoted, null as null, anything else its JSON minified, numbers as DuckDB's
 * JSON writer spells them (`1e21`, where JavaScript writes `1e+21`).
 */
export function duckdbJsonString(raw: string | undefined): string | null {
  if (raw === undefined || raw === 'null') return null;
  if (raw[0] === '"') return JSON.parse(raw) as string;
  let out = '';
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (inString) {
      if (c === '\\') {
        out += c + (raw[i + 1] ?? '');
        i++;
        continue;
      }
      if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (SPACE.test(c) || (c === '+' && (raw[i - 1] === 'e' || raw[i - 1] === 'E'))) continue;
    out += c;
  }
  return out;
}
