import { hotValuesOf, type HotValues, type StoredEventRow } from '../../../core/events/columns';
import { AppError } from '../../../errors';
import { giveBack, lineBuffer } from './line-buffers';

/**
 * Row lines: the form every stored event takes between processing and the tables, in the log's
 * row frames and in processed copies. DuckDB's CSV reader loads them as they are
 * (`load/line-sql.ts`), so a load never re-encodes or re-parses an event in JavaScript (DuckDB's
 * CSV reader loads these rows far faster than its JSON reader would; see bench/NOTES.md). One
 * line per event, fields separated by U+001F; a field holding any control character is quoted
 * with U+001E (doubled inside); U+0015 alone is NULL. Compact JSON never contains a raw control
 * character, so `properties` is written verbatim.
 */
export const FIELD = '\x1f';
export const QUOTE = '\x1e';
export const NULL_MARK = '\x15';
const CONTROL = /[\x00-\x1f]/;

const field = (s: string): string => (CONTROL.test(s) ? QUOTE + s.replaceAll(QUOTE, QUOTE + QUOTE) + QUOTE : s);
const nullable = (s: string | null | undefined): string => (s == null ? NULL_MARK : field(s));

/** Columns of a row line, in order, with the types DuckDB reads them as. */
export const LINE_COLUMNS: ReadonlyArray<readonly [string, string]> = [
  ['uuid', 'VARCHAR'],
  ['team_id', 'INTEGER'],
  ['event', 'VARCHAR'],
  ['distinct_id', 'VARCHAR'],
  ['person_id', 'VARCHAR'],
  ['ts_ms', 'BIGINT'],
  ['created_ms', 'BIGINT'],
  ['elements_chain', 'VARCHAR'],
  ['mat_browser', 'VARCHAR'],
  ['mat_os', 'VARCHAR'],
  ['mat_current_url', 'VARCHAR'],
  ['mat_session_id', 'VARCHAR'],
  ['properties', 'VARCHAR'],
];

function checkRow(r: StoredEventRow): void {
  if (!Number.isSafeInteger(r.teamId) || r.teamId < 0 || r.teamId >= 1e10) throw new AppError('invalid_input', 'Event rows need a project id (0 to 9,999,999,999).', 'team_id');
  checkUnplaced(r);
}

function checkUnplaced(r: UnplacedRow): void {
  if (!Number.isFinite(r.timestamp) || !Number.isFinite(r.createdAt)) throw new AppError('invalid_input', 'Event rows need finite timestamps.', 'timestamp');
  if (typeof r.uuid !== 'string' || r.uuid.length === 0) throw new AppError('invalid_input', 'Event rows need a uuid.', 'uuid');
}

const int = (n: number): number => (Number.isInteger(n) ? n : Math.round(n));

const hotOf = (r: Pick<StoredEventRow, 'hot' | 'properties'>): HotValues => r.hot ?? hotValuesOf(JSON.parse(r.properties) as Record<string, unknown>);
const propsField = (p: string): string => (CONTROL.test(p) ? field(p) : p);

/** Lines of rows whose project and person are known: the lines `encodeRowLines` makes, their slots filled. */
export function encodePlacedLines(rows: readonly StoredEventRow[]): Buffer {
  for (const r of rows) checkRow(r);
  const { lines, teams, persons } = encodeRowLines(rows);
  const buf = Buffer.from(lines.buffer, lines.byteOffset, lines.byteLength);
  for (let i = 0; i < rows.length; i++) {
    fillTeamSlot(buf, teams[i], rows[i].teamId);
    fillPersonSlot(buf, persons[i], rows[i].personId);
  }
  return buf;
}

/**
 * The `team_id` and `person_id` fields of a line encoded before its project and person are
 * known: events are normalized and encoded in a parser thread as their body is parsed, before
 * the key is checked, and get their project and person on the main thread (in log order) without
 * being encoded again. The slots are overwritten in place (`fillTeamSlot`: the id as 10 digits;
 * `fillPersonSlot`: a 36-character uuid). A person slot never filled reads as NULL (an event
 * without a person); a team slot never filled fails the load (no row may land in no project).
 */
export const TEAM_SLOT = ' '.repeat(10);
export const PERSON_SLOT = ' '.repeat(36);

/** A row to encode before its project and person are known. */
export type UnplacedRow = Omit<StoredEventRow, 'personId' | 'teamId'>;

/** Lines of rows (no frame header), each with a team slot at `teams[i]` and a person slot at `persons[i]`. */
export interface RowLines {
  lines: Uint8Array;
  teams: Int32Array;
  persons: Int32Array;
}

/**
 * Printable ASCII only: a line whose short fields (uuid, names, elements chain, hot values) all
 * pass needs no quoting, and each character before its properties is one byte, so that part is
 * written at once and its slots found by counting characters.
 */
const PLAIN = /^[\x20-\x7e]*$/;
const plain = (s: string): boolean => PLAIN.test(s);
const plainOrNull = (s: string | null | undefined): boolean => s == null || PLAIN.test(s);

/**
 * Encode rows as lines with a team and a person slot each, into one new buffer. `stringified`:
 * every row's properties is `JSON.stringify`'s text, which escapes every control character, so
 * none is looked for.
 */
export function encodeRowLines(rows: readonly UnplacedRow[], stringified = false): RowLines {
  let estimate = 0;
  for (const r of rows) {
    estimate += r.properties.length + r.uuid.length + r.event.length + r.distinctId.length + r.elementsChain.length + 300;
    if (r.hot) for (const v of r.hot) if (v) estimate += v.length;
  }
  let buf: Buffer = lineBuffer(estimate);
  const teams = new Int32Array(rows.length);
  const persons = new Int32Array(rows.length);
  const slots = TEAM_SLOT.length + PERSON_SLOT.length + 1;
  let o = 0;
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i];
    checkUnplaced(r);
    const h = hotOf(r);
    const ec = r.elementsChain ?? '';
    const props = stringified ? r.properties : propsField(r.properties);
    if (plain(r.uuid) && plain(r.event) && plain(r.distinctId) && plain(ec) && plainOrNull(h[0]) && plainOrNull(h[1]) && plainOrNull(h[2]) && plainOrNull(h[3])) {
      // Nothing to quote (nor a value reading as the NULL mark), and one byte a character.
      const before = [r.uuid, TEAM_SLOT, r.event, r.distinctId, PERSON_SLOT, int(r.timestamp), int(r.createdAt), ec, h[0] ?? NULL_MARK, h[1] ?? NULL_MARK, h[2] ?? NULL_MARK, h[3] ?? NULL_MARK, ''].join(FIELD);
      // The worst case (three bytes a character) first; the exact size only when that does not fit.
      if (buf.length - o < before.length + props.length * 3 + 1) {
        const need = before.length + Buffer.byteLength(props) + 1;
        if (buf.length - o < need) buf = grow(buf, o + need);
      }
      teams[i] = o + r.uuid.length + 1;
      persons[i] = teams[i] + TEAM_SLOT.length + 1 + r.event.length + 1 + r.distinctId.length + 1;
      o += buf.write(before, o);
    } else {
      const uuid = field(r.uuid) + FIELD;
      const names = FIELD + field(r.event) + FIELD + field(r.distinctId) + FIELD;
      const tail = FIELD + int(r.timestamp) + FIELD + int(r.createdAt) + FIELD + field(ec) + FIELD + nullable(h[0]) + FIELD + nullable(h[1]) + FIELD + nullable(h[2]) + FIELD + nullable(h[3]) + FIELD;
      const room = buf.length - o;
      if (room < (uuid.length + names.length + tail.length + props.length) * 3 + slots) {
        const need = Buffer.byteLength(uuid) + Buffer.byteLength(names) + Buffer.byteLength(tail) + Buffer.byteLength(props) + slots;
        if (room < need) buf = grow(buf, o + need);
      }
      o += buf.write(uuid, o);
      teams[i] = o;
      o += buf.write(TEAM_SLOT, o, 'latin1');
      o += buf.write(names, o);
      persons[i] = o;
      o += buf.write(PERSON_SLOT, o, 'latin1');
      o += buf.write(tail, o);
    }
    o += buf.write(props, o);
    buf[o++] = 0x0a;
  }
  return { lines: buf.subarray(0, o), teams, persons };
}

/** Write a project id into a line's team slot (10 digits, zero-padded). */
export function fillTeamSlot(lines: Buffer, slot: number, teamId: number): void {
  lines.write(teamSlotText(teamId), slot, 'latin1');
}

/** Write a project id into every slot of `slots` (a request's lines: one project), formatted once. */
export function fillTeamSlots(lines: Buffer, slots: Int32Array, teamId: number): void {
  const text = teamSlotText(teamId);
  for (let i = 0; i < slots.length; i++) lines.write(text, slots[i], 'latin1');
}

function teamSlotText(teamId: number): string {
  if (!Number.isSafeInteger(teamId) || teamId < 0 || teamId >= 1e10) throw new Error(`a project id must fit the team slot: ${teamId}`);
  return String(teamId).padStart(TEAM_SLOT.length, '0');
}

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Write a person id into a line's slot (left as it is, NULL when read, for an event without a person). */
export function fillPersonSlot(lines: Buffer, slot: number, personId: string | null): void {
  if (personId === null) return;
  if (!UUID_TEXT.test(personId)) throw new Error(`a person id must be a uuid: ${JSON.stringify(personId)}`);
  lines.write(personId, slot, 'latin1');
}

function grow(buf: Buffer, need: number): Buffer {
  const next = lineBuffer(Math.max(need, buf.length * 2));
  buf.copy(next);
  giveBack(buf.buffer);
  return next;
}

/**
 * The records of log or processed text read back in JavaScript (the inverse of the encoders
 * above, for engines that do not load this format themselves), each as its fields: U+001F between fields, a newline after
 * the record, U+001E around a field holding control characters (newlines included; doubled
 * inside), U+0015 alone for NULL. Frame headers (U+001D) and blank lines are skipped.
 */
export function* readRecords(text: string): Generator<Array<string | null>> {
  let i = 0;
  const n = text.length;
  while (i < n) {
    const first = text.charCodeAt(i);
    if (first === 0x0a) {
      i++;
      continue;
    }
    if (first === 0x1d) {
      const end = text.indexOf('\n', i);
      i = end < 0 ? n : end + 1;
      continue;
    }
    const fields: Array<string | null> = [];
    for (;;) {
      let value: string;
      if (text[i] === QUOTE) {
        value = '';
        let j = i + 1;
        for (;;) {
          const end = text.indexOf(QUOTE, j);
          if (end < 0) throw new Error('an unterminated quoted field in processed log text');
          value += text.slice(j, end);
          if (text[end + 1] === QUOTE) {
            value += QUOTE;
            j = end + 2;
            continue;
          }
          i = end + 1;
          break;
        }
        fields.push(value);
      } else {
        let end = i;
        while (end < n) {
          const c = text.charCodeAt(end);
          if (c === 0x1f || c === 0x0a) break;
          end++;
        }
        value = text.slice(i, end);
        fields.push(value === NULL_MARK ? null : value);
        i = end;
      }
      if (i >= n || text.charCodeAt(i) === 0x0a) {
        i++;
        break;
      }
      i++; // the field separator
    }
    yield fields;
  }
}
