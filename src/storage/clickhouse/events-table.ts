import type { StoredEventRow } from '../../core/events/columns';
import { PERSON_SLOT, readRecords } from '../events/log/row-lines';
import { readRowFrames } from '../events/log/frame-reader';
import type { EventSink } from '../events/types';
import { clampClickHouseTime, sql, trusted, type ClickHouseFeatures, type SqlFragment } from '../../core/query';
import type { ClickHouse } from './client';
import { EVENT_TABLES } from './schema';

/**
 * Events into and out of ClickHouse's `events` table (schema.ts). Rows arrive as the event
 * store's processed log lines (log/row-lines.ts: the lines DuckDB loads), are rewritten as
 * TabSeparated text — the format both 18.16 and modern servers parse fastest — and sent as one
 * INSERT per load (ClickHouse wants few, large inserts).
 */

/** Fields of a processed record, in its order (row-lines.ts's `LINE_COLUMNS`). */
const LINE_FIELDS = 13;

const TSV_SPECIAL = /[\\\t\n\r\0]/;
const TSV_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0' };

/** A value as a TabSeparated field: `\N` for NULL, backslash escapes for what would break the line. */
export const tsvField = (value: string | null): string =>
  value === null ? '\\N' : TSV_SPECIAL.test(value) ? value.replace(/[\\\t\n\r\0]/g, (c) => TSV_ESCAPES[c]!) : value;

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** Epoch milliseconds as the server's time column(s): `YYYY-MM-DD hh:mm:ss.ffffff`, or on 18.16 the seconds and the milliseconds. */
export function timeFields(at: number, f: Pick<ClickHouseFeatures, 'datetime64'>): string {
  const ms = clampClickHouseTime(at, f.datetime64);
  const d = new Date(ms);
  const seconds = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)} ${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}`;
  const millis = ((ms % 1000) + 1000) % 1000;
  return f.datetime64 ? `${seconds}.${pad(millis, 3)}000` : `${seconds}\t${millis}`;
}

/** The table's columns in the order `tabSeparatedRows` writes them. */
export function insertColumns(f: Pick<ClickHouseFeatures, 'datetime64'>): string[] {
  const time = (name: string) => (f.datetime64 ? [name] : [name, `${name}_ms`]);
  return ['uuid', 'team_id', 'event', 'distinct_id', 'person_id', ...time('timestamp'), ...time('created_at'), 'elements_chain', 'mat_browser', 'mat_os', 'mat_current_url', 'mat_session_id', 'properties', '_seg'];
}

/** Rows per chunk of TabSeparated text handed to the HTTP body. */
const CHUNK_ROWS = 4096;

/**
 * Processed log text (frame headers and blank lines skipped) as TabSeparated rows in
 * `insertColumns` order, in chunks; `seg` is the load's watermark, kept with each row.
 */
export function* tabSeparatedRows(text: string, seg: number, f: Pick<ClickHouseFeatures, 'datetime64'>): Generator<string> {
  let chunk = '';
  let rows = 0;
  for (const v of readRecords(text)) {
    if (v.length !== LINE_FIELDS) throw new Error(`a processed record has ${v.length} fields, not ${LINE_FIELDS}`);
    const [uuid, team, event, distinctId, person, ts, created, chain, browser, os, url, session, properties] = v;
    const personId = person === null || person === PERSON_SLOT ? null : person;
    chunk +=
      `${tsvField(uuid!)}\t${Number(team)}\t${tsvField(event!)}\t${tsvField(distinctId!)}\t${tsvField(personId)}\t` +
      `${timeFields(Number(ts), f)}\t${timeFields(Number(created), f)}\t${tsvField(chain ?? '')}\t` +
      `${tsvField(browser!)}\t${tsvField(os!)}\t${tsvField(url!)}\t${tsvField(session!)}\t${tsvField(properties!)}\t${seg}\n`;
    if (++rows === CHUNK_ROWS) {
      yield chunk;
      chunk = '';
      rows = 0;
    }
  }
  if (chunk) yield chunk;
}

/** Load processed log text: one INSERT. Run again after a failure, it adds nothing a read sees twice (the table collapses equal rows). */
export async function insertProcessed(ch: ClickHouse, text: string, seg: number): Promise<void> {
  await ch.insertTabSeparated(ch.table('events'), insertColumns(ch.features), tabSeparatedRows(text, seg, ch.features));
}

/**
 * The embedded event store's loads into this table (`EventSink`): a batch's processed files read
 * a frame at a time, as one INSERT. A batch inserted again (a retry, a replay after a crash) is
 * read once: the table collapses equal rows.
 */
export function clickhouseSink(ch: ClickHouse): EventSink {
  return {
    async load(files, watermark) {
      let rows = 0;
      async function* chunks(): AsyncGenerator<string> {
        for (const file of files) {
          for await (const frame of readRowFrames(file)) {
            rows += frame.rows;
            yield* tabSeparatedRows(frame.text, watermark, ch.features);
          }
        }
      }
      await ch.insertTabSeparated(ch.table('events'), insertColumns(ch.features), chunks());
      return rows;
    },
  };
}

/** An event as read back (times in epoch milliseconds). */
export type ClickHouseEventRow = Omit<StoredEventRow, 'hot'>;

const msOf = (column: string, f: ClickHouseFeatures) => trusted(f.datetime64 ? `toUnixTimestamp64Milli(${column})` : `(toUnixTimestamp(${column}) * 1000 + ${column}_ms)`);

/** Position after which a page continues: the last row's time and uuid. */
export interface EventCursor {
  timestamp: number;
  uuid: string;
}

/** A project's newest events first (ties by uuid, descending), after `before` when given. */
export async function newestEvents(ch: ClickHouse, teamId: number, options: { limit: number; before?: EventCursor }): Promise<ClickHouseEventRow[]> {
  const f = ch.features;
  const bind = ch.dialect.bind;
  const ts = msOf('timestamp', f);
  const conditions: SqlFragment[] = [sql`team_id = ${bind(teamId)}`];
  if (options.before) {
    const at = bind(options.before.timestamp);
    // The seconds bound lets the primary key skip what is newer; the exact order is (time, uuid).
    conditions.push(
      sql`timestamp <= toDateTime(${bind(Math.floor(options.before.timestamp / 1000))}, 'UTC')`,
      sql`(${ts} < ${at} OR (${ts} = ${at} AND toString(uuid) < ${bind(options.before.uuid)}))`,
    );
  }
  const where = conditions.reduce((all, c) => sql`${all} AND ${c}`);
  const order = trusted(f.datetime64 ? 'timestamp DESC, uuid DESC' : 'timestamp DESC, timestamp_ms DESC, uuid DESC');
  if (!Number.isSafeInteger(options.limit) || options.limit < 0) throw new RangeError('a limit is a non-negative integer');
  const rows = await ch.query<Record<string, string | number | null>>(
    sql`SELECT toString(uuid) AS uuid, team_id, event, distinct_id, toString(person_id) AS person_id, properties, ${ts} AS ts, ${msOf('created_at', f)} AS created, elements_chain
        FROM ${trusted(ch.table('events'))} FINAL WHERE ${where} ORDER BY ${order} LIMIT ${trusted(String(options.limit))}`,
  );
  return rows.map((r) => ({
    uuid: String(r.uuid),
    teamId: Number(r.team_id),
    event: String(r.event),
    distinctId: String(r.distinct_id),
    personId: r.person_id === null ? null : String(r.person_id),
    properties: String(r.properties),
    timestamp: Number(r.ts),
    createdAt: Number(r.created),
    elementsChain: String(r.elements_chain),
  }));
}

/** How many events a project has (each uuid once). */
export async function countEvents(ch: ClickHouse, teamId: number): Promise<number> {
  const [row] = await ch.query<{ n: string | number }>(sql`SELECT count() AS n FROM ${trusted(ch.table('events'))} FINAL WHERE team_id = ${ch.dialect.bind(teamId)}`);
  return Number(row?.n ?? 0);
}

/**
 * Every event of a deleted project: a mutation, which ClickHouse applies in the background (the
 * project is gone, so nothing reads them meanwhile).
 */
export async function deleteTeamEvents(ch: ClickHouse, teamId: number): Promise<void> {
  for (const table of EVENT_TABLES) await ch.command(sql`ALTER TABLE ${trusted(ch.table(table))} DELETE WHERE team_id = ${ch.dialect.bind(teamId)}`);
}
