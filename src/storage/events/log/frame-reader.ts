import { open } from 'node:fs/promises';
import type { IntakeContext } from '../types';
import { FRAME_MAGIC, INTAKE_MAGIC } from './frames';

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
  /** Zero bytes after the last frame: the unused end of a segment file made ahead (`files-ahead.ts`), not damage. */
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
