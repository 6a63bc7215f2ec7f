import { csvRecord, eventCsvColumns } from '../../core/events/csv';
import { parseElementsChain, type ElementObject } from '../../core/events/elements';
import type { Row } from '../../storage/db';
import type { Person } from '../../storage';
import { PERSON_PROPERTY_SUBSET } from './params';

/** An event as PostHog's `ClickhouseEventSerializer` returns it. */
export interface EventObject {
  id: string;
  distinct_id: string;
  properties: Record<string, unknown>;
  event: string;
  timestamp: string;
  person: PersonObject | null;
  elements: ElementObject[];
  elements_chain: string;
}

export interface PersonObject {
  is_identified: boolean;
  /** PostHog shows one distinct id; ours is the person's smallest (the store keeps no creation order). */
  distinct_ids: string[];
  properties: Record<string, unknown>;
}

/** Python's `datetime.isoformat()` of a UTC instant, as PostHog writes event timestamps. */
export function isoTimestamp(value: Date): string {
  const iso = value.toISOString();
  const ms = value.getUTCMilliseconds();
  return `${iso.slice(0, 19)}${ms ? `.${String(ms).padStart(3, '0')}000` : ''}+00:00`;
}

export function personObject(person: Person): PersonObject {
  const properties: Record<string, unknown> = {};
  for (const key of PERSON_PROPERTY_SUBSET) {
    if (Object.prototype.hasOwnProperty.call(person.properties, key)) properties[key] = person.properties[key];
  }
  let first = person.distinctIds[0];
  for (const id of person.distinctIds) if (first === undefined || id < first) first = id;
  return { is_identified: person.isIdentified, distinct_ids: first === undefined ? [] : [first], properties };
}

/** Stored properties text as an object; anything else (not JSON, not an object) as `{}`. */
export function parseProperties(text: unknown): Record<string, unknown> {
  if (typeof text !== 'string') return {};
  try {
    const value = JSON.parse(text);
    return value && typeof value === 'object' && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

/** A stored row (EVENT_ROW_COLUMNS) as an event object; `person` is looked up by the caller. */
export function toEventObject(row: Row, person: PersonObject | null): EventObject {
  const chain = typeof row.elements_chain === 'string' ? row.elements_chain : '';
  return {
    id: String(row.uuid),
    distinct_id: String(row.distinct_id),
    properties: parseProperties(row.properties),
    event: String(row.event),
    timestamp: isoTimestamp(row.timestamp as Date),
    person,
    elements: parseElementsChain(chain),
    elements_chain: chain,
  };
}

/** A cell of a `select` result as JSON: dates as ISO text, non-finite numbers as null. */
export function selectValue(value: unknown, type: string): unknown {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return /^(Nullable\()?Date\)?$/.test(type) ? value.toISOString().slice(0, 10) : isoTimestamp(value);
  // A boolean column (typed UInt8, as ClickHouse writes booleans) reads true/false whichever engine gave it: ClickHouse gives 1/0.
  if (typeof value === 'number' && /^(Nullable\()?UInt8\)?$/.test(type)) return value !== 0;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'object' && 'micros' in value) {
    const v = value as { months?: number; days?: number; micros: bigint | number };
    return (v.months ?? 0) * 30 * 86_400 + (v.days ?? 0) * 86_400 + Number(v.micros) / 1e6;
  }
  return value;
}

/**
 * One event as CSV, a header row and its row: the columns an export of it would have (its own
 * property keys, flattened one level, with the person's), the values those of its JSON object,
 * so the person columns are empty when `person` is null.
 */
export function eventCsv(event: EventObject): string {
  const columns = eventCsvColumns(Object.keys(event.properties));
  const person = event.person;
  const personValue: Record<string, unknown> = {
    'person.distinct_ids.0': person?.distinct_ids[0],
    'person.is_identified': person?.is_identified,
    'person.properties.email': person?.properties.email,
    'person.properties.name': person?.properties.name,
    'person.properties.username': person?.properties.username,
  };
  const values = columns.map((c) => (c.kind === 'fixed' ? event[c.name] : c.kind === 'person' ? personValue[c.name] : event.properties[c.key]));
  return csvRecord(columns.map((c) => c.name)) + csvRecord(values);
}
