import { open, type FileHandle } from 'node:fs/promises';
import type { RecentUuids } from '../load/recent-uuids';
import type { EncodedRows } from '../types';
import type { TimeSpan } from '../log/segments';
import { frameHeader } from '../log/frames';
import { giveBack } from '../log/line-buffers';

/**
 * A segment's processed copy, written as it is made: each frame is appended after the one before
 * (in the thread pool), so a segment's output is never held whole in memory, and encoding reuses
 * a few buffers instead of faulting in fresh pages for every frame.
 */
export class ProcWriter {
  private tail: Promise<void> = Promise.resolve();
  private file: FileHandle | null = null;
  private error: unknown = null;
  /** Bytes written so far. */
  bytes = 0;

  constructor(readonly path: string) {}

  /** Queue `frame` (one buffer, or its parts in order) for writing; `release` is called once its bytes are no longer needed (written, or given up). */
  append(frame: Uint8Array | Uint8Array[], release?: () => void): void {
    this.tail = this.tail
      .then(async () => {
        try {
          if (this.error) return;
          this.file ??= await open(this.path, 'w');
          let parts = Array.isArray(frame) ? frame : [frame];
          let total = 0;
          for (const p of parts) total += p.length;
          // One writev; what a short write leaves is written again from where it stopped.
          for (let written = 0; written < total; ) {
            const { bytesWritten } = await this.file.writev(parts);
            if (bytesWritten <= 0) throw new Error(`short write to ${this.path}`);
            written += bytesWritten;
            this.bytes += bytesWritten;
            if (written < total) parts = [Buffer.concat(parts).subarray(bytesWritten)];
          }
        } catch (error) {
          this.error = error;
        } finally {
          release?.();
        }
      });
  }

  /** Resolves once every frame appended so far is written (or given up). */
  settled(): Promise<void> {
    return this.tail;
  }

  /** Everything appended is written and the file closed (made empty if nothing was); throws the first failure. */
  async finish(): Promise<void> {
    await this.tail;
    if (!this.error && !this.file) this.file = await open(this.path, 'w').catch((error) => ((this.error = error), null));
    await this.close();
    if (this.error) throw this.error;
  }

  /** Given up (the state is discarded): the writes in flight end, the file is closed. */
  async abandon(): Promise<void> {
    this.error ??= new Error('abandoned');
    await this.tail;
    await this.close();
  }

  private async close(): Promise<void> {
    const file = this.file;
    this.file = null;
    await file?.close().catch(() => undefined);
  }
}

/** A segment's processing so far: the next frame, the copy being written, and the event-time spans. */
export interface ProcState {
  next: number;
  writer: ProcWriter;
  rows: number;
  spans: Map<number, TimeSpan> | undefined;
  /** Frames whose processing threw while the segment was active: dead-lettered when finished. */
  failed: Array<{ index: number; error: unknown }>;
  /** Some row made so far may repeat one taken lately (see RecentUuids). */
  mayRepeat: boolean;
  /** The oldest filter generation the rows made so far were added in (Infinity: none yet). */
  uuidGen: number;
  /** The rows' property keys by team and day, while every request made so far gave them (see `EncodedRows.propertyKeys`). */
  keys: PropertyKeysByDay | undefined;
  /** A row frame was copied: its rows' properties were never checked as JSON. */
  rowFrames: boolean;
  /** A request's rows, made by the intake processor. */
  add(rows: EncodedRows): void;
  /** A row frame of the segment (rows logged as they are), copied as it is. */
  addFrame(frame: Buffer, rows: number): void;
  flush(): void;
}

export function newProcState(recent: RecentUuids, path: string): ProcState {
  // Encoded rows gathered into one frame under one header: large requests' lines as they are,
  // small ones' copied together (a frame of 2,000 single events was 2,001 buffers to write).
  let parts: Uint8Array[] = [];
  let partRows = 0;
  let partBytes = 0;
  let small: Buffer | null = null;
  let smallAt = 0;
  /** The small parts' buffers in `parts`, to be reused once their frame is written. */
  let filled: Buffer[] = [];
  /** The large requests' lines buffers in `parts`, given back to be filled again once their frame is written (`line-buffers.ts`). */
  let encoded: ArrayBufferLike[] = [];
  const closeSmall = () => {
    if (!small) return;
    parts.push(small.subarray(0, smallAt));
    filled.push(small);
    small = null;
    smallAt = 0;
  };
  // Only lines under a quarter of SMALL_PARTS_BYTES come here (`add`), never empty.
  const addSmall = (lines: Uint8Array) => {
    if (small && smallAt + lines.length > small.length) closeSmall();
    small ??= spareSmall.pop() ?? Buffer.allocUnsafe(SMALL_PARTS_BYTES);
    small.set(lines, smallAt);
    smallAt += lines.length;
  };
  const noteSpan = (teamId: number, lo: number, hi: number) => {
    const spans = st.spans;
    if (!spans) return;
    const span = spans.get(teamId);
    if (!span) spans.set(teamId, [lo, hi]);
    else {
      if (lo < span[0]) span[0] = lo;
      if (hi > span[1]) span[1] = hi;
    }
  };
  const flushParts = () => {
    closeSmall();
    if (parts.length === 0) return;
    let crc = 0;
    for (const p of parts) crc = Bun.hash.crc32(p, crc);
    const buffers = filled;
    const lines = encoded;
    st.writer.append([frameHeader(partBytes, crc, partRows), ...parts], buffers.length > 0 || lines.length > 0 ? () => reuse(buffers, lines) : undefined);
    filled = [];
    encoded = [];
    st.rows += partRows;
    parts = [];
    partRows = 0;
    partBytes = 0;
  };
  const st: ProcState = {
    next: 0,
    writer: new ProcWriter(path),
    rows: 0,
    spans: new Map(),
    failed: [],
    mayRepeat: false,
    uuidGen: Infinity,
    keys: new Map(),
    rowFrames: false,
    add(rows) {
      if (rows.rows === 0) return;
      // Tested in log order, as processing goes: an earlier request's rows are in the filter.
      st.uuidGen = Math.min(st.uuidGen, recent.generation);
      if (recent.addUuids(rows.uuids)) st.mayRepeat = true;
      if (rows.lines.length < SMALL_PARTS_BYTES / 4) {
        addSmall(rows.lines);
        giveBack(rows.lines.buffer); // copied
      } else {
        closeSmall();
        parts.push(rows.lines);
        encoded.push(rows.lines.buffer);
      }
      partRows += rows.rows;
      partBytes += rows.lines.length;
      if (rows.span) noteSpan(rows.teamId, rows.span[0], rows.span[1]);
      if (st.keys) {
        if (rows.propertyKeys) addKeys(st.keys, rows.teamId, rows.propertyKeys);
        else st.keys = undefined;
      }
      if (partRows >= ROWS_PER_FRAME) flushParts();
    },
    addFrame(frame, rows) {
      st.flush();
      st.writer.append(frame);
      st.rows += rows;
      st.spans = undefined; // a row frame's times are not recorded here
      st.keys = undefined;
      st.rowFrames = true;
    },
    flush: flushParts,
  };
  return st;
}

/** Top-level property keys of rows, by team, then by UTC day (days since the epoch). */
export type PropertyKeysByDay = Map<number, Map<number, Set<string>>>;

function addKeys(into: PropertyKeysByDay, teamId: number, byDay: Iterable<readonly [number, Iterable<string>]>): void {
  let days = into.get(teamId);
  if (!days) into.set(teamId, (days = new Map()));
  for (const [day, keys] of byDay) {
    let set = days.get(day);
    if (!set) days.set(day, (set = new Set()));
    for (const k of keys) set.add(k);
  }
}

/** The keys of several segments' rows together; undefined when one of them does not know its own. */
export function mergePropertyKeys(parts: ReadonlyArray<PropertyKeysByDay | undefined>): PropertyKeysByDay | undefined {
  const out: PropertyKeysByDay = new Map();
  for (const part of parts) {
    if (!part) return undefined;
    for (const [teamId, days] of part) addKeys(out, teamId, days);
  }
  return out;
}

/** Rows per encoded frame of a processed copy. */
const ROWS_PER_FRAME = 2000;
/** Small requests' lines are copied together into buffers of this size. */
const SMALL_PARTS_BYTES = 256 * 1024;

/**
 * Small parts' buffers whose frames are written, kept to be filled again: a fresh buffer faults in
 * its pages as the rows are copied in, which cost the main thread more than the copy itself
 * under single events (see bench/NOTES.md). A few are enough: frames are written one after another.
 */
const spareSmall: Buffer[] = [];
const SPARE_SMALL_MAX = 4;

function reuse(buffers: Buffer[], lines: ArrayBufferLike[]): void {
  for (const b of buffers) if (spareSmall.length < SPARE_SMALL_MAX) spareSmall.push(b);
  for (const l of lines) giveBack(l);
}
