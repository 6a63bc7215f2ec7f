import { duckdbCsvField, duckdbJsonString, EVENT_CSV_PERSON_COLUMNS, jsonObjectMembers, type EventCsvColumn } from '../../core/events/csv';
import type { Row } from '../../storage/db';
import { isoTimestamp, type PersonObject } from './event-object';
import { streamSliceRows } from '../../storage/events/read/export-reads';
import type { ExportContext, Slice } from './export-plan';
import type { Scope } from './list';
import type { Order } from '../../storage/events/read/list-statements';

/**
 * CSV exports where the engine does not write files here (ClickHouse): each slice's rows are
 * streamed from it in list order and written as CSV here, record for record what DuckDB's own
 * writer gives for the same events (its quoting, its `json_extract_string` text of each property,
 * the person columns as the file path splices them), so an export is the same whichever engine
 * holds the events.
 */

const encoder = new TextEncoder();
/** Text gathered before it is sent: fewer, larger chunks cost less per pull of the response. */
const CSV_CHUNK_CHARS = 1 << 20;

/** The person columns of a distinct id without a person: empty fields. */
export const NO_PERSON_FIELDS = ','.repeat(EVENT_CSV_PERSON_COLUMNS.length);

/**
 * The person columns of a CSV record, each after a comma, as the sorted path's join writes them
 * (`PERSON` in storage's export-statements): the smallest distinct id, `is_identified`, and email, name and
 * username as `json_extract_string` gives them. A distinct id without a person gets NO_PERSON_FIELDS.
 */
export function personCsvFields(person: PersonObject): string {
  const prop = (key: string): string | null => {
    const v = person.properties[key];
    if (v === undefined || v === null) return null;
    return typeof v === 'string' ? v : JSON.stringify(v);
  };
  const value: Record<(typeof EVENT_CSV_PERSON_COLUMNS)[number], string | null> = {
    'person.distinct_ids.0': person.distinct_ids[0] ?? null,
    'person.is_identified': person.is_identified ? 'true' : 'false',
    'person.properties.email': prop('email'),
    'person.properties.name': prop('name'),
    'person.properties.username': prop('username'),
  };
  return EVENT_CSV_PERSON_COLUMNS.map((c) => `,${duckdbCsvField(value[c])}`).join('');
}

const text = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

/** One event row as a CSV record of `columns` (the person columns, consecutive, from `personFields`). */
export function eventCsvRecord(row: Row, columns: readonly EventCsvColumn[], personFields: (distinctId: string) => string): string {
  const members = jsonObjectMembers(typeof row.properties === 'string' ? row.properties : '');
  const distinctId = String(row.distinct_id);
  let out = '';
  let person = false;
  for (let i = 0; i < columns.length; i++) {
    const c = columns[i] as EventCsvColumn;
    if (c.kind === 'person') {
      if (!person) out += personFields(distinctId);
      person = true;
      continue;
    }
    let value: string | null;
    if (c.kind === 'property') value = duckdbJsonString(members.get(c.key));
    else if (c.name === 'timestamp') value = isoTimestamp(row.timestamp as Date);
    else value = text(row[c.name === 'id' ? 'uuid' : c.name]);
    out += (i ? ',' : '') + duckdbCsvField(value);
  }
  return `${out}\r\n`;
}

/**
 * The slices' CSV records (no header), at most `limit` of them, each slice read under the LIMIT
 * of the rows still wanted where the plan cuts it (see `Slice.limit`); a slice holding more rows
 * than counted (stored since) still ends the export at `limit`.
 */
export async function* csvRowSlices(
  ctx: ExportContext, scope: Scope, order: Order, slices: AsyncIterable<Slice>, limit: number | null, columns: readonly EventCsvColumn[],
): AsyncGenerator<Uint8Array> {
  const people = new Map<string, string>();
  const personFields = (distinctId: string): string => {
    let fields = people.get(distinctId);
    if (fields === undefined) {
      if (people.size >= 100_000) people.clear();
      const found = ctx.personOf(distinctId);
      fields = found ? personCsvFields(found) : NO_PERSON_FIELDS;
      people.set(distinctId, fields);
    }
    return fields;
  };
  let sent = 0;
  for await (const slice of slices) {
    if (limit !== null && sent >= limit) return;
    const cap = slice.limit === null || limit === null ? null : limit - sent;
    for await (const rows of await streamSliceRows(ctx, scope, order, slice, cap, null)) {
      let out = '';
      for (const row of rows) {
        if (limit !== null && sent >= limit) break;
        out += eventCsvRecord(row, columns, personFields);
        sent++;
        if (out.length >= CSV_CHUNK_CHARS) {
          yield encoder.encode(out);
          out = '';
        }
      }
      if (out) yield encoder.encode(out);
      if (limit !== null && sent >= limit) return;
    }
  }
}
