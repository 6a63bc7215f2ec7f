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
