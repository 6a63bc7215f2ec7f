import { close, fdatasync, fsync, ftruncate, open, openSync, closeSync, write, writev, writevSync } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { PropertyKeysByDay } from '../process/processed-copy';
import { encodeIntakeFrames, type IntakeParts } from './frames';
import { promisify } from 'node:util';

const openAsync = promisify(open);
const writeAsync = promisify(write);
const writevAsync = (fd: number, bufs: readonly Buffer[], position: number) =>
  new Promise<number>((resolve, reject) => writev(fd, bufs as Buffer[], position, (error, n) => (error ? reject(error) : resolve(n))));
const fdatasyncAsync = promisify(fdatasync);
const fsyncAsync = promisify(fsync);
const ftruncateAsync = promisify(ftruncate);
const closeAsync = promisify(close);

export const segmentName = (id: number): string => `seg-${String(id).padStart(16, '0')}.wal`;
export const SEGMENT_RE = /^seg-(\d{16})\.wal$/;
/** A segment's processed copy (its intake frames turned into rows) sits next to it under this suffix. */
export const PROCESSED_SUFFIX = '.proc';

/** A closed segment waiting to be loaded into DuckDB. */
export interface SealedSegment {
  id: number;
  path: string;
  bytes: number;
  rows: number;
  /** Rows per team, so a query can wait only for the segments holding its team. */
  teams: Map<number, number>;
  /**
   * The span of event times per team ([earliest, latest] epoch ms), so a load checks for a
   * retry's original only in the Parquet files it could be in. Absent when unknown (a segment
   * found by recovery, a dead-letter replay): then every file is a candidate.
   */
  spans?: Map<number, TimeSpan>;
  /** Intake frames in the segment (capture requests still to be turned into rows). */
  intake: number;
  /**
   * Frames written to its file (absent: found by recovery). Equal to the memos' count (one a
   * request) when every frame written was acknowledged and each request was one frame: then
   * processing from memory needs nothing from the file.
   */
  frames?: number;
  /**
   * The decoded form of each frame, in file order (null for a frame without one), kept while
   * memory allows so processing need not parse the bodies again; absent after recovery.
   */
  memos?: unknown[];
  /** The highest intake sequence number in the segment (0: none). */
  lastSeq: number;
  /** Epoch ms when its file was opened for writing (absent: found by recovery). */
  openedAt?: number;
  /**
   * False when every row of the segment was certainly new when it was logged (recent-uuids.ts);
   * true or absent (recovery, replays): its load takes the full dedupe check. Intake frames
   * count as new here: their rows are tested when they are processed.
   */
  mayRepeat?: boolean;
  /**
   * The oldest recent-uuid generation its rows were added to the filter in (`RecentUuids`);
   * -Infinity or absent when some row was not added (recovery, replays), Infinity when none is
   * known yet (intake frames count once processed).
   */
  uuidGen?: number;
  /** Its rows' property keys by team and day, when processing gave them all (see `EncodedRows.propertyKeys`). */
  propertyKeys?: PropertyKeysByDay;
  /**
   * Every row of its processed copy came from the intake processor, whose properties are JSON
   * DuckDB reads (see `EncodedRows`): the load takes them without checking each as JSON.
   */
  checkedJson?: boolean;
}

/** What an append may carry besides the frame. */
export interface AppendExtra {
  spans?: ReadonlyMap<number, TimeSpan>;
  /** An intake frame: its decoded form (or null when not kept) and its sequence number. */
  intake?: { memo: unknown; seq: number };
  /** A row frame's uuids, tested against the recent-uuid filter: false when certainly new. Absent: not tested (a replay). */
  mayRepeat?: boolean;
  /** The filter generation current when the row frame's uuids were added (absent: not added). */
  uuidGen?: number;
}

export type TimeSpan = [lo: number, hi: number];

/** The bytes of these segments' log files (no array made: every capture request asks, through the backpressure check). */
export function bytesOf(segments: readonly SealedSegment[]): number {
  let n = 0;
  for (const seg of segments) n += seg.bytes;
  return n;
}

/** Merge `from` into `into` (widening each team's span); `undefined` (unknown) wins. */
export function mergeSpans(into: Map<number, TimeSpan> | undefined, from: ReadonlyMap<number, TimeSpan> | undefined): Map<number, TimeSpan> | undefined {
  if (!into || !from) return undefined;
  for (const [team, [lo, hi]] of from) {
    const cur = into.get(team);
    into.set(team, cur ? [Math.min(cur[0], lo), Math.max(cur[1], hi)] : [lo, hi]);
  }
  return into;
}

export interface WalOptions {
  dir: string;
  /** fsync before acknowledging (`durable`), or acknowledge once written to the OS (`relaxed`). */
  durable: boolean;
  /** Extra wait before a group commit to gather more writers; 0 relies on natural batching. */
  groupCommitMs: number;
  segmentMaxRows: number;
  segmentMaxBytes: number;
  segmentMaxAgeMs: number;
  /** In relaxed mode, how often written data is fsynced anyway. */
  relaxedSyncMs: number;
  /** The store's clock (epoch ms): a segment's age. */
  now: () => number;
  onSeal(segment: SealedSegment): void;
  /** Called after appends resolve: frames of the active segment may be processed now. */
  onDurable?(): void;
  /** Whether a segment file of `bytes` may be made ahead now (disk space); absent: yes. */
  mayPrepare?(bytes: number): boolean;
  /** Test seam: awaited before each flush (`hooks.beforeLogSync`). */
  beforeSync?(): void | Promise<void>;
}

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

interface Group {
  /** Encoded frames, or intake frames encoded at commit (many into one buffer). */
  items: Array<Buffer | IntakeParts>;
  bytes: number;
  rows: number;
  teams: Map<number, number>;
  spans: Map<number, TimeSpan> | undefined;
  intake: number;
  memos: unknown[];
  lastSeq: number;
  mayRepeat: boolean;
  uuidGen: number;
  waiters: Waiter[];
}

/** A file of zeros made ahead for the next segment (see `prepareNext`). */
interface Prepared {
  fd: number;
  path: string;
  size: number;
}

interface Active extends SealedSegment {
  uuidGen: number;
  frames: number;
  /** Bytes of zeros the file was made with (0: a fresh, empty file). */
  zeroed: number;
  /** Group commits written to it. */
  writes: number;
  fd: number;
  openedAt: number;
  dirty: boolean;
}

const newGroup = (): Group => ({ items: [], bytes: 0, rows: 0, teams: new Map(), spans: new Map(), intake: 0, memos: [], lastSeq: 0, mayRepeat: false, uuidGen: Infinity, waiters: [] });

/**
 * The append-only log with group commit. Durable mode: one fdatasync at a time; the appends
 * arriving while it runs form the next group, which is written (one writev, straight from the
 * main thread when small: a copy to the page cache costs microseconds, a trip through the
 * thread pool a good part of a millisecond) the moment the flush ends, and flushed at once. So
 * every request waits for one to two flushes, and each flush, with its kernel CPU, covers
 * as many requests as arrived during the one before. Relaxed mode: a group resolves once written,
 * and gathers the appends made in one turn of the event loop.
 * One loop owns the file descriptor (writes, rotation); a segment is closed only once the sync
 * stage has drained, so nothing closes a file under an in-flight write or sync.
 */
export class WalWriter {
  private group = newGroup();
  /** Where a group's intake frames are encoded, reused: commits run one at a time, each written before the next. */
  private scratch: Buffer | null = null;
  private active: Active | null = null;
  private running = false;
  private sealRequested = false;
  private syncRequested = false;
  private idleWaiters: Array<() => void> = [];
  /** Groups written but not yet fsynced (durable mode), oldest first. */
  private unsynced: Array<{ g: Group; a: Active }> = [];
  private syncing: Promise<void> | null = null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private closed = false;
  /** Bytes accepted but not yet written to the log (in memory). */
  queuedBytes = 0;
  /** Bytes of segments being sealed: no longer active, not yet handed on (`onSeal`). */
  sealingBytes = 0;
  /** Group commits so far (one write each). */
  writes = 0;
  nextId: number;
  /** The next segment's file, being made or ready. */
  private preparing: Promise<void> | null = null;
  private prepared: Prepared | null = null;
  private preparedCount = 0;
  /** The last sealed segment's size and writes, to size the next segment's zeros. */
  private lastSealed = { bytes: 0, writes: 0 };

  constructor(
    private readonly options: WalOptions,
    firstId: number,
  ) {
    this.nextId = firstId;
    const tick = Math.max(10, Math.min(options.segmentMaxAgeMs / 4, options.relaxedSyncMs / 2, 250));
    this.timer = setInterval(() => this.onTick(), tick);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Rows and teams in the active segment (written, not yet sealed). */
  get activeSegment(): Readonly<SealedSegment> | null {
    return this.active;
  }

  /** Append one request's frames (one intake frame, or row frames written back to back in one group). */
  append(frames: readonly Buffer[] | IntakeParts, rows: number, teams: ReadonlyMap<number, number>, extra: AppendExtra = {}): Promise<void> {
    if (this.closed) return Promise.reject(new Error('The event log is closed.'));
    return new Promise<void>((resolve, reject) => {
      const g = this.group;
      let bytes = 0;
      if (Array.isArray(frames)) {
        for (const f of frames) {
          g.items.push(f);
          bytes += f.length;
        }
      } else {
        const intake = frames as IntakeParts;
        g.items.push(intake);
        bytes = intake.maxBytes;
      }
      g.bytes += bytes;
      g.rows += rows;
      for (const [team, n] of teams) g.teams.set(team, (g.teams.get(team) ?? 0) + n);
      if (extra.intake) {
        g.intake++;
        g.memos.push(extra.intake.memo);
        g.lastSeq = Math.max(g.lastSeq, extra.intake.seq);
        // An intake frame's event times are known only once processed.
        g.spans = undefined;
      } else {
        g.memos.push(null);
        g.spans = mergeSpans(g.spans, extra.spans);
        if (extra.mayRepeat !== false) g.mayRepeat = true;
        g.uuidGen = Math.min(g.uuidGen, extra.uuidGen ?? -Infinity);
      }
      g.waiters.push({ resolve, reject });
      this.queuedBytes += bytes;
      this.kick();
    });
  }

  /** Resolves once the next segment's file being made ahead (if any) is ready or given up. */
  async whenPrepared(): Promise<void> {
    await this.preparing;
  }

  /** Seal the active segment (if it holds rows) once the writes before this call are done. */
  seal(): Promise<void> {
    this.sealRequested = true;
    this.kick();
    return this.idle();
  }

  /** Resolves when every append made before this call is written and the loop is idle. */
  idle(): Promise<void> {
    if (!this.running && this.group.waiters.length === 0 && !this.sealRequested && !this.syncRequested) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async close(): Promise<void> {
    await this.seal();
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    const a = this.active;
    if (a) {
      // Opened but never written to (rows 0): nothing to keep.
      this.active = null;
      await closeAsync(a.fd).catch(() => undefined);
      await rm(a.path, { force: true });
    }
    await this.whenPrepared();
    const ready = this.prepared;
    this.prepared = null;
    if (ready) await discard(ready);
  }

  private onTick(): void {
    const a = this.active;
    if (a && a.rows > 0 && this.options.now() - a.openedAt >= this.options.segmentMaxAgeMs) this.sealRequested = true;
    if (!this.options.durable && a?.dirty) this.syncRequested = true;
    if (this.sealRequested || this.syncRequested) this.kick();
  }

  private kick(): void {
    if (this.running) return;
    this.running = true;
    void this.loop();
  }

  private async loop(): Promise<void> {
    try {
      for (;;) {
        if (this.group.waiters.length > 0) {
          if (this.options.groupCommitMs > 0) await Bun.sleep(this.options.groupCommitMs);
          // Gather while the disk flushes: the group is written once the flush in flight ends.
          while (this.syncing) await this.syncing;
          // Relaxed: no flush to gather behind, so gather the appends of this turn of the event
          // loop (the requests read in the same poll); else nearly every request costs its own
          // synchronous write on the main thread, and relaxed capture ran slower than durable
          // (see bench/NOTES.md).
          if (!this.options.durable) await new Promise<void>((resolve) => setImmediate(resolve));
          const g = this.group;
          this.group = newGroup();
          await this.commit(g);
        } else if (this.sealRequested) {
          this.sealRequested = false;
          await this.sealActive();
        } else if (this.syncRequested) {
          this.syncRequested = false;
          const a = this.active;
          if (a?.dirty) {
            a.dirty = false;
            await fdatasyncAsync(a.fd).catch(() => (a.dirty = true));
          }
        } else break;
      }
    } finally {
      this.running = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  private async commit(g: Group): Promise<void> {
    const items = g.items;
    g.items = [];
    let written = 0;
    let a: Active | null = null;
    try {
      this.scratch ??= Buffer.allocUnsafe(SCRATCH_BYTES);
      const bufs = encodeGroup(items, this.scratch);
      for (const b of bufs) written += b.length;
      a = this.active ?? (await this.openSegment());
      await writeFully(a.fd, bufs, a.bytes, written <= SYNC_WRITE_MAX_BYTES);
    } catch (error) {
      this.queuedBytes -= g.bytes;
      // Cut what may have been written so the segment ends at its last whole frame; if even
      // that fails, seal it here: recovery's frame check drops the partial frame.
      if (a) await ftruncateAsync(a.fd, a.bytes).catch(() => this.sealActive().catch(() => undefined));
      for (const w of g.waiters) w.reject(error);
      return;
    }
    this.queuedBytes -= g.bytes;
    this.writes++;
    a.writes++;
    a.frames += items.length;
    a.bytes += written;
    a.rows += g.rows;
    for (const [team, n] of g.teams) a.teams.set(team, (a.teams.get(team) ?? 0) + n);
    a.spans = mergeSpans(a.spans, g.spans);
    a.intake += g.intake;
    a.lastSeq = Math.max(a.lastSeq, g.lastSeq);
    a.mayRepeat = a.mayRepeat || g.mayRepeat;
    a.uuidGen = Math.min(a.uuidGen, g.uuidGen);
    if (this.options.durable) {
      this.unsynced.push({ g, a });
      this.startSync();
    } else {
      a.dirty = true;
      this.acknowledge(g, a);
    }
    if (a.rows >= this.options.segmentMaxRows || a.bytes >= this.options.segmentMaxBytes) await this.sealActive();
  }

  /**
   * The sync stage: fdatasync, then resolve every group written before the call. If the sync
   * fails the pages' fate is unknown, so those appends are refused (clients retry; uuid dedupe
   * absorbs a copy that did reach the disk) and the segment is rotated.
   */
  private startSync(): void {
    if (this.syncing || this.unsynced.length === 0) return;
    this.syncing = (async () => {
      while (this.unsynced.length > 0) {
        const batch = this.unsynced;
        this.unsynced = [];
        try {
          await this.options.beforeSync?.();
          for (const fd of new Set(batch.map((b) => b.a.fd))) await fdatasyncAsync(fd);
          for (const b of batch) this.acknowledge(b.g, b.a);
        } catch (error) {
          for (const b of batch) for (const w of b.g.waiters) w.reject(error);
          this.sealRequested = true;
          this.kick();
        }
      }
    })().finally(() => {
      this.syncing = null;
      this.startSync();
    });
  }

  /**
   * A group is durable (or written, relaxed): its frames' memos join the segment's, in file
   * order, so processing may take them from memory; then its appends resolve.
   */
  private acknowledge(g: Group, a: Active): void {
    for (const m of g.memos) a.memos!.push(m);
    for (const w of g.waiters) w.resolve();
    if (g.intake > 0) this.options.onDurable?.();
  }

  private async openSegment(): Promise<Active> {
    const id = this.nextId++;
    const path = join(this.options.dir, segmentName(id));
    let fd = -1;
    let zeroed = 0;
    const ready = this.prepared;
    this.prepared = null;
    if (ready) {
      try {
        await rename(ready.path, path);
        fd = ready.fd;
        zeroed = ready.size;
      } catch {
        await discard(ready);
      }
    }
    if (fd < 0) fd = await openAsync(path, 'wx');
    // The new name must survive a power loss too, or its acknowledged frames vanish with it.
    const dirFd = openSync(this.options.dir, 'r');
    try {
      await fsyncAsync(dirFd);
    } finally {
      closeSync(dirFd);
    }
    this.active = { id, path, fd, bytes: 0, rows: 0, teams: new Map(), spans: new Map(), intake: 0, frames: 0, memos: [], lastSeq: 0, mayRepeat: false, uuidGen: Infinity, openedAt: this.options.now(), dirty: false, zeroed, writes: 0 };
    this.prepareNext();
    return this.active;
  }

  private async sealActive(): Promise<void> {
    const a = this.active;
    if (!a || a.rows === 0) return;
    // Its acknowledgements first: the sync stage still needs the descriptor.
    while (this.syncing) await this.syncing;
    this.active = null;
    // Still counted while the file is closed: an admission meanwhile must not find room it lacks.
    this.sealingBytes += a.bytes;
    try {
      if (a.dirty) await fdatasyncAsync(a.fd).catch(() => undefined);
      // Zeros past the last frame go: DuckDB reads row segments as they are.
      if (a.zeroed > a.bytes) await ftruncateAsync(a.fd, a.bytes).catch(() => undefined);
      await closeAsync(a.fd).catch(() => undefined);
    } finally {
      this.sealingBytes -= a.bytes;
    }
    this.lastSealed = { bytes: a.bytes, writes: a.writes };
    this.options.onSeal({ id: a.id, path: a.path, bytes: a.bytes, rows: a.rows, teams: a.teams, spans: a.spans, intake: a.intake, frames: a.frames, memos: a.memos, lastSeq: a.lastSeq, mayRepeat: a.mayRepeat, uuidGen: a.uuidGen, openedAt: a.openedAt });
  }

  /**
   * Durable mode, small groups: make the next segment's file ahead, full of zeros and flushed.
   * Overwriting allocated blocks changes no metadata, so each group's fdatasync flushes data
   * only, no journal commit: a small write and flush takes less time and CPU, and capture over
   * a few connections answers more requests (see bench/NOTES.md). Sized
   * from the last segment (sealed every second or so under load); skipped for large groups,
   * whose flushes are few and whose bytes would be written twice. A crash leaves the zeros
   * after the last frame, which recovery cuts (`scanFrames` tells them from damage).
   */
  private prepareNext(): void {
    const last = this.lastSealed;
    if (!this.options.durable || this.preparing || this.prepared || this.closed) return;
    if (last.bytes < PREPARE_MIN_BYTES || last.bytes / Math.max(1, last.writes) > PREPARE_MAX_GROUP_BYTES) return;
    const size = Math.min(this.options.segmentMaxBytes, Math.ceil((last.bytes * 1.25) / ZERO_CHUNK) * ZERO_CHUNK);
    if (this.options.mayPrepare && !this.options.mayPrepare(size)) return;
    const path = join(this.options.dir, `next-${++this.preparedCount}.wal.tmp`);
    this.preparing = (async () => {
      const fd = await openAsync(path, 'wx');
      try {
        const zeros = Buffer.alloc(Math.min(size, ZERO_CHUNK));
        for (let at = 0; at < size; at += zeros.length) await writeAsync(fd, zeros, 0, Math.min(zeros.length, size - at), at);
        await fdatasyncAsync(fd);
      } catch (error) {
        await closeAsync(fd).catch(() => undefined);
        throw error;
      }
      if (this.closed) await discard({ fd, path });
      else this.prepared = { fd, path, size };
    })()
      .catch(() => rm(path, { force: true }).catch(() => undefined))
      .finally(() => {
        this.preparing = null;
      });
  }
}

/** A file made ahead that will not be used: closed and removed. */
async function discard(file: Pick<Prepared, 'fd' | 'path'>): Promise<void> {
  await closeAsync(file.fd).catch(() => undefined);
  await rm(file.path, { force: true });
}

const ZERO_CHUNK = 1024 * 1024;
const PREPARE_MIN_BYTES = 256 * 1024;
const PREPARE_MAX_GROUP_BYTES = 64 * 1024;

/**
 * A buffer of this size is kept for encoding groups' intake frames (a fresh one per group cost
 * every single-event capture request its allocation and page faults); larger groups get their own.
 */
const SCRATCH_BYTES = 1024 * 1024;

/** The group's frames as buffers in order: runs of intake frames encoded together (the first run into `scratch`). */
function encodeGroup(items: ReadonlyArray<Buffer | IntakeParts>, scratch: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let run: IntakeParts[] = [];
  let into: Buffer | undefined = scratch;
  const flush = () => {
    if (run.length === 0) return;
    out.push(...encodeIntakeFrames(run, into));
    into = undefined;
    run = [];
  };
  for (const item of items) {
    if (!Buffer.isBuffer(item)) {
      run.push(item);
      continue;
    }
    flush();
    out.push(item);
  }
  flush();
  return out;
}

/** Linux's limit on buffers per writev. */
const IOV_MAX = 1024;

/** Groups up to this size are written from the main thread (a page-cache copy); larger ones in the thread pool. */
const SYNC_WRITE_MAX_BYTES = 128 * 1024;

/** The buffers still to write after `written` bytes: whole ones dropped, a partly written one cut. */
function dropWritten(pending: Buffer[], written: number): Buffer[] {
  let left = written;
  let i = 0;
  while (i < pending.length && left >= pending[i].length) left -= pending[i++].length;
  const rest = pending.slice(i);
  if (left > 0) rest[0] = rest[0].subarray(left);
  return rest;
}

/**
 * Write the group's frames in order with writev: one syscall for many requests' frames and no
 * concatenated copy (copying a large group cost more main-thread time than the write itself).
 * `inline` writes from the main thread (small groups), else in the thread pool.
 */
async function writeFully(fd: number, bufs: readonly Buffer[], position: number, inline: boolean): Promise<void> {
  let pending = bufs.slice();
  let at = position;
  while (pending.length > 0) {
    const chunk = pending.length > IOV_MAX ? pending.slice(0, IOV_MAX) : pending;
    const written = inline
      ? writevSync(fd, chunk, at)
      : chunk.length === 1
        ? (await writeAsync(fd, chunk[0], 0, chunk[0].length, at)).bytesWritten
        : await writevAsync(fd, chunk, at);
    if (written <= 0) throw new Error('short write to the event log');
    at += written;
    pending = dropWritten(pending, written);
  }
}
