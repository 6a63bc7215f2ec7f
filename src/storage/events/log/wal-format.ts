import { open } from 'node:fs/promises';
import { hotValuesOf, type HotValues, type StoredEventRow } from '../../../core/events/columns';
import { AppError } from '../../../errors';

/**
 * The write-ahead log is a file DuckDB's CSV reader loads as it is, so a flush never re-encodes
 * or re-parses an event in JavaScript (DuckDB's CSV reader loads these rows far faster than its
 * JSON reader would; see bench/NOTES.md). One line per event, fields separated by U+001F; a
 * field holding any control character
 * is quoted with U+001E (doubled inside); U+0015 alone is NULL. Compact JSON never contains a raw
 * control character, so `properties` is written verbatim.
 *
 * Each group-commit write is one frame: a header line `\x1dW1 <payload bytes> <crc32> <rows>\n`
 * (skipped by the reader as a comment: no data line can start with U+001D) followed by the rows.
 * Recovery checks every frame's length and CRC and cuts the file at the last whole frame.
 *
 * Capture requests are logged as *intake* frames instead: `\x1dI1 <payload bytes> <crc32>
 * <events>\n`, a payload of one JSON line of context (project, receive time, address, …) and
 * the request's decoded body as it came. The request is answered once that frame is durable;
 * normalizing its events, persons and encoding them as rows happen behind it (the loader turns
 * a segment's intake frames into rows, in log order, before loading). A segment holding intake
 * frames is therefore not read by DuckDB directly but through its processed copy.
 */
export const FIELD = '\x1f';
export const QUOTE = '\x1e';
export const NULL_MARK = '\x15';
const FRAME_MAGIC = '\x1dW1 ';
const INTAKE_MAGIC = '\x1dI1 ';
const CONTROL = /[\x00-\x1f]/;

const field = (s: string): string => (CONTROL.test(s) ? QUOTE + s.replaceAll(QUOTE, QUOTE + QUOTE) + QUOTE : s);
const nullable = (s: string | null | undefined): string => (s == null ? NULL_MARK : field(s));

/** Columns of a WAL line, in order, with the types DuckDB reads them as. */
export const WAL_COLUMNS: ReadonlyArray<readonly [string, string]> = [
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

/** Rows whose project and person are known (`append`: dead-letter replays, tests) as one frame (header + lines). */
export function encodeFrame(rows: readonly StoredEventRow[]): Buffer {
  return frameLines(encodePlacedLines(rows), rows.length);
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
  for (const r of rows) estimate += r.properties.length + r.uuid.length + r.event.length + r.distinctId.length + r.elementsChain.length + 300;
  let buf: Buffer = Buffer.allocUnsafe(estimate);
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

/** The header of a frame of `rows` lines, `bytes` long with this CRC-32, written before them. */
export function frameHeader(bytes: number, crc: number, rows: number): Buffer {
  return Buffer.from(`${FRAME_MAGIC}${bytes} ${(crc >>> 0).toString(16)} ${rows}\n`, 'latin1');
}

/** Wrap already-encoded lines (dead-letter replay, rescued rows, `encodeFrame`) in a frame. */
export function frameLines(payload: Uint8Array, rows: number): Buffer {
  return Buffer.concat([frameHeader(payload.length, Bun.hash.crc32(payload), rows), payload]);
}

function grow(buf: Buffer, need: number): Buffer {
  const next = Buffer.allocUnsafe(Math.max(need, buf.length * 2));
  buf.copy(next);
  return next;
}

/** What an intake frame records besides the body: everything processing needs, fixed at receipt. */
export interface IntakeContext {
  teamId: number;
  /** Receive time (epoch ms): the default timestamp, the clock-skew reference, `created_at`. */
  receivedAt: number;
  ip: string | null;
  anonymizeIps: boolean;
  /** The request's send time (epoch ms), for clock-skew correction. */
  sentAt: number | null;
  /** Posted to /engage (nameless events are `$identify`). */
  engage: boolean;
  /**
   * The seed of the ids its events without a client uuid get (`seededUuids`), so processing it
   * again names them the same; absent in frames logged before it was kept (random ids then).
   */
  uuidSeed?: string;
}

/** An intake frame not yet encoded: the group commit writes many of them into one buffer. */
export interface IntakeParts {
  /** The context as one JSON line (with its newline). */
  ctx: string;
  /** The decoded body: its UTF-8 bytes when the request carried them exactly, else the text. */
  body: Uint8Array | string;
  events: number;
  /** Bytes the frame may take (exact for byte bodies; a bound for text), reckoned once. */
  maxBytes: number;
}

/** A fixed-width header (`\x1dI1 <10-digit length> <8-hex crc> <10-digit events>\n`): written after its payload. */
const INTAKE_HEADER_BYTES = 35;

/** An intake frame's parts, for the group commit to encode. */
export function intakeParts(ctx: IntakeContext, body: Uint8Array | string, events: number): IntakeParts {
  const line = `${JSON.stringify(ctx)}\n`;
  const bodyBytes = typeof body === 'string' ? (body.length > 65_536 ? Buffer.byteLength(body) : body.length * 3) : body.length;
  return { ctx: line, body, events, maxBytes: INTAKE_HEADER_BYTES + line.length * 3 + bodyBytes };
}

/**
 * Byte bodies from this size are written from their own buffer (one more iovec of the group's
 * write) instead of being copied into the group's: a large batch cost a copy into fresh pages,
 * a page fault each, all on the main thread.
 */
const COPY_BODY_MAX = 64 * 1024;

const ownBuffer = (f: IntakeParts): f is IntakeParts & { body: Uint8Array } => typeof f.body !== 'string' && f.body.length >= COPY_BODY_MAX;

/**
 * Intake frames back to back, as the buffers to write in order: one buffer for the whole group
 * (`scratch` when it is large enough: the caller's, reused once the write is done; else a new
 * one), with large byte bodies left where they are (`COPY_BODY_MAX`).
 */
export function encodeIntakeFrames(frames: readonly IntakeParts[], scratch?: Buffer): Buffer[] {
  let cap = 0;
  for (const f of frames) cap += ownBuffer(f) ? f.maxBytes - f.body.length : f.maxBytes;
  const buf = scratch && scratch.length >= cap ? scratch : Buffer.allocUnsafe(cap);
  const out: Buffer[] = [];
  let from = 0; // where the part of `buf` not yet in `out` starts
  let o = 0;
  for (const f of frames) {
    const start = o;
    o += INTAKE_HEADER_BYTES;
    o += buf.write(f.ctx, o);
    if (ownBuffer(f)) {
      const ctx = buf.subarray(start + INTAKE_HEADER_BYTES, o);
      writeIntakeHeader(buf, start, ctx.length + f.body.length, Bun.hash.crc32(f.body, Bun.hash.crc32(ctx)), f.events);
      out.push(buf.subarray(from, o), Buffer.from(f.body.buffer, f.body.byteOffset, f.body.length));
      from = o;
      continue;
    }
    if (typeof f.body === 'string') o += buf.write(f.body, o);
    else {
      buf.set(f.body, o);
      o += f.body.length;
    }
    const payload = buf.subarray(start + INTAKE_HEADER_BYTES, o);
    writeIntakeHeader(buf, start, payload.length, Bun.hash.crc32(payload), f.events);
  }
  if (o > from) out.push(buf.subarray(from, o));
  return out;
}

/**
 * The header `\x1dI1 <10-digit length> <8-hex crc> <10-digit events>\n` written digit by digit
 * into `buf` at `at` (formatting it as a string, padStart then encoding, showed in the main
 * thread's profile of every capture request).
 */
function writeIntakeHeader(buf: Buffer, at: number, payloadBytes: number, crc: number, events: number): void {
  for (let i = 0; i < INTAKE_MAGIC.length; i++) buf[at + i] = INTAKE_MAGIC.charCodeAt(i);
  let o = at + INTAKE_MAGIC.length;
  o = writeDigits(buf, o, payloadBytes, 10, 10);
  buf[o++] = 0x20;
  o = writeDigits(buf, o, crc >>> 0, 8, 16);
  buf[o++] = 0x20;
  o = writeDigits(buf, o, events, 10, 10);
  buf[o] = 0x0a;
}

const HEX_DIGITS = '0123456789abcdef';

/** `n` in `radix`, zero-padded to `width` digits (n < radix ** width), at `at`; returns the end. */
function writeDigits(buf: Buffer, at: number, n: number, width: number, radix: number): number {
  let v = n;
  for (let i = width - 1; i >= 0; i--) {
    buf[at + i] = HEX_DIGITS.charCodeAt(v % radix);
    v = Math.floor(v / radix);
  }
  return at + width;
}

/** The context and body of an intake frame found by `scanFrames`. */
export function decodeIntakeFrame(data: Uint8Array, frame: ScannedFrame): { context: IntakeContext; text: string } {
  const payload = Buffer.from(data.buffer, data.byteOffset + frame.payloadStart, frame.end - frame.payloadStart);
  const nl = payload.indexOf(0x0a);
  return { context: JSON.parse(payload.toString('utf8', 0, nl)) as IntakeContext, text: payload.toString('utf8', nl + 1) };
}

export interface ScannedFrame {
  start: number;
  end: number;
  /** Rows (`rows` frames) or events as received (`intake` frames). */
  rows: number;
  kind: 'rows' | 'intake';
  payloadStart: number;
}

export interface FrameScan {
  /** The whole frames whose length and CRC check, in file order. */
  frames: ScannedFrame[];
  /** Byte ranges that failed their check (a torn tail or corruption), to be dead-lettered. */
  damaged: Array<{ start: number; end: number }>;
  /** Zero bytes after the last frame: the unused end of a segment file made ahead (`wal.ts`), not damage. */
  zeroTail: number;
}

/**
 * Walk the frames of a segment. A damaged range is skipped by searching for the next header
 * whose CRC checks, so one bad frame never costs the acknowledged frames after it.
 */
export function scanFrames(data: Uint8Array): FrameScan {
  // No frame ends in a zero byte (row lines end in a newline, bodies are JSON text).
  let limit = data.length;
  while (limit > 0 && data[limit - 1] === 0) limit--;
  const out: FrameScan = { frames: [], damaged: [], zeroTail: 0 };
  let p = 0;
  let badStart = -1;
  while (p < limit) {
    const frame = readFrameAt(data, p);
    if (frame) {
      if (badStart >= 0) out.damaged.push({ start: badStart, end: p });
      badStart = -1;
      out.frames.push({ start: p, end: frame.end, rows: frame.rows, kind: frame.kind, payloadStart: frame.payloadStart });
      p = frame.end;
      continue;
    }
    if (badStart < 0) badStart = p;
    const next = indexOfMagic(data, p + 1);
    p = next < 0 || next > limit ? limit : next;
  }
  if (badStart >= 0) out.damaged.push({ start: badStart, end: limit });
  out.zeroTail = data.length - Math.max(p, limit);
  return out;
}

function readFrameAt(data: Uint8Array, p: number): { end: number; rows: number; kind: 'rows' | 'intake'; payloadStart: number } | null {
  if (data[p] !== 0x1d || (data[p + 1] !== 0x57 && data[p + 1] !== 0x49) || data[p + 2] !== 0x31 || data[p + 3] !== 0x20) return null;
  const kind = data[p + 1] === 0x49 ? 'intake' : 'rows';
  let nl = p + 4;
  while (nl < data.length && nl < p + 64 && data[nl] !== 0x0a) nl++;
  if (data[nl] !== 0x0a) return null;
  const parts = Buffer.from(data.buffer, data.byteOffset + p + 4, nl - p - 4).toString('latin1').split(' ');
  if (parts.length !== 3 || !/^\d+$/.test(parts[0]) || !/^[0-9a-f]+$/.test(parts[1]) || !/^\d+$/.test(parts[2])) return null;
  const len = Number(parts[0]);
  const end = nl + 1 + len;
  if (end > data.length) return null;
  if (Bun.hash.crc32(data.subarray(nl + 1, end)) !== parseInt(parts[1], 16)) return null;
  return { end, rows: Number(parts[2]), kind, payloadStart: nl + 1 };
}

/**
 * The row frames of a log or processed file, read a block at a time (a file may hold hundreds of
 * megabytes): each frame's lines as text, with its row count. Throws on a frame that does not
 * check out (recovery cuts damaged tails before anything is loaded).
 */
export async function* readRowFrames(path: string, blockBytes = 8 * 1024 * 1024): AsyncGenerator<{ text: string; rows: number }> {
  const file = await open(path, 'r');
  try {
    const size = (await file.stat()).size;
    let pending = Buffer.alloc(0);
    let position = 0;
    for (;;) {
      const block = Buffer.allocUnsafe(blockBytes);
      const { bytesRead } = await file.read(block, 0, blockBytes, position);
      position += bytesRead;
      const data = pending.length ? Buffer.concat([pending, block.subarray(0, bytesRead)]) : block.subarray(0, bytesRead);
      let p = 0;
      for (let frame = readFrameAt(data, p); frame; frame = readFrameAt(data, p)) {
        if (frame.kind === 'rows') yield { text: data.toString('utf8', frame.payloadStart, frame.end), rows: frame.rows };
        p = frame.end;
      }
      pending = data.subarray(p);
      const at = position - pending.length;
      // Said at once, not after holding the rest of the file: a damaged frame is not read past.
      if (bytesRead === 0 ? pending.some((b) => b !== 0) : unreadable(pending, at, size) === 'damaged') {
        throw new Error(`${path}: a frame at byte ${at} does not check out`);
      }
      if (bytesRead === 0) return;
    }
  } finally {
    await file.close();
  }
}

/**
 * Why no frame could be read from `data` (a file's bytes from `offset` on, the file `size` long):
 * more bytes are needed (a frame cut by the block, or a zero tail so far), or the frame there is
 * damaged (no frame header, a complete frame whose check failed, or one claiming to end past the
 * file).
 */
function unreadable(data: Buffer, offset: number, size: number): 'more' | 'damaged' {
  if (data.length === 0) return 'more';
  if (data[0] !== 0x1d) return data.every((b) => b === 0) ? 'more' : 'damaged';
  const nl = data.indexOf(0x0a);
  if (nl < 0) return data.length < 64 ? 'more' : 'damaged';
  const header = data.toString('latin1', 4, nl).split(' ');
  const length = Number(header[0]);
  if (header.length !== 3 || !Number.isSafeInteger(length)) return 'damaged';
  const end = nl + 1 + length;
  if (end <= data.length) return 'damaged';
  return offset + end > size ? 'damaged' : 'more';
}

function indexOfMagic(data: Uint8Array, from: number): number {
  const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const rows = buf.indexOf(FRAME_MAGIC, from, 'latin1');
  const intake = buf.indexOf(INTAKE_MAGIC, from, 'latin1');
  return rows < 0 ? intake : intake < 0 ? rows : Math.min(rows, intake);
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

/** SQL string literal (file paths we build ourselves from numeric ids; quotes doubled anyway). */
export const sqlString = (s: string): string => `'${s.replaceAll("'", "''")}'`;

/** `read_csv(...)` over WAL files, typed per `WAL_COLUMNS`. */
export function readWalSql(files: readonly string[], extra = ''): string {
  const columns = `{${WAL_COLUMNS.map(([n, t]) => `'${n}': '${t}'`).join(', ')}}`;
  const list = `[${files.map(sqlString).join(', ')}]`;
  return (
    `read_csv(${list}, columns = ${columns}, delim = '\x1f', quote = '\x1e', escape = '\x1e', comment = '\x1d', ` +
    `nullstr = '\x15', allow_quoted_nulls = false, header = false, auto_detect = false, new_line = '\\n', strict_mode = true${extra})`
  );
}

/**
 * The SELECT list turning WAL columns into events columns (EVENT_COLUMNS order). `checkedJson`:
 * the properties are known to be JSON DuckDB reads (rows the intake processor made), so the
 * per-row parse that would refuse a bad one is left out (a large part of a load's CPU).
 */
export const walToEventSelect = (checkedJson = false): string =>
  `uuid, team_id, event, distinct_id, nullif(person_id, '${PERSON_SLOT}') AS person_id, ${checkedJson ? 'properties' : 'properties::JSON AS properties'}, ` +
  'make_timestamp(ts_ms * 1000) AS timestamp, ' +
  'make_timestamp(created_ms * 1000) AS created_at, elements_chain, mat_browser, mat_os, mat_current_url, mat_session_id';

export const WAL_TO_EVENT_SELECT = walToEventSelect();
