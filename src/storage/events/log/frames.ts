import type { StoredEventRow } from '../../../core/events/columns';
import type { IntakeContext } from '../types';
import { encodePlacedLines } from './row-lines';

/**
 * The log's frames. Each group-commit write of rows is one frame: a header line
 * `\x1dW1 <payload bytes> <crc32> <rows>\n` (skipped by DuckDB's reader as a comment: no row line
 * can start with U+001D) followed by the row lines (`row-lines.ts`). Recovery checks every frame's
 * length and CRC and cuts the file at the last whole frame (`frame-reader.ts`).
 *
 * Capture requests are logged as *intake* frames instead: `\x1dI1 <payload bytes> <crc32>
 * <events>\n`, a payload of one JSON line of context (project, receive time, address, …) and
 * the request's decoded body as it came. The request is answered once that frame is durable;
 * normalizing its events, persons and encoding them as rows happen behind it (`process/`), in log
 * order, before loading. A segment holding intake frames is therefore not read by DuckDB
 * directly but through its processed copy.
 */
export const FRAME_MAGIC = '\x1dW1 ';
export const INTAKE_MAGIC = '\x1dI1 ';

/** Rows whose project and person are known (`append`: dead-letter replays, tests) as one frame (header + lines). */
export function encodeFrame(rows: readonly StoredEventRow[]): Buffer {
  return frameLines(encodePlacedLines(rows), rows.length);
}

/** The header of a frame of `rows` lines, `bytes` long with this CRC-32, written before them. */
export function frameHeader(bytes: number, crc: number, rows: number): Buffer {
  return Buffer.from(`${FRAME_MAGIC}${bytes} ${(crc >>> 0).toString(16)} ${rows}\n`, 'latin1');
}

/** Wrap already-encoded lines (dead-letter replay, rescued rows, `encodeFrame`) in a frame. */
export function frameLines(payload: Uint8Array, rows: number): Buffer {
  return Buffer.concat([frameHeader(payload.length, Bun.hash.crc32(payload), rows), payload]);
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
