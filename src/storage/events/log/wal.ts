import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Settings } from '../settings';
import { closeAsync, fdatasyncAsync, ftruncateAsync, openAsync, syncDirAsync } from './fd-io';
import { FilesAhead } from './files-ahead';
import type { IntakeParts } from './frames';
import { encodeGroup, SCRATCH_BYTES, SYNC_WRITE_MAX_BYTES, writeFully } from './group-write';
import { mergeSpans, segmentName, type SealedSegment, type TimeSpan } from './segments';

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

/**
 * The store's settings the log reads (documented on `EventStoreOptions`: `durable` fsyncs before
 * acknowledging, `groupCommitMs` waits to gather more writers, the segment limits, `relaxedSyncMs`
 * fsyncs relaxed writes anyway, `now` ages segments), and where the log reports to.
 */
export interface WalOptions extends Pick<Settings, 'durable' | 'groupCommitMs' | 'segmentMaxRows' | 'segmentMaxBytes' | 'segmentMaxAgeMs' | 'relaxedSyncMs' | 'now'> {
  dir: string;
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
  /** The next segment's file, made ahead (durable mode). */
  private readonly ahead: FilesAhead;
  /** The last sealed segment's size and writes, to size the next segment's zeros. */
  private lastSealed = { bytes: 0, writes: 0 };

  constructor(
    private readonly options: WalOptions,
    firstId: number,
  ) {
    this.nextId = firstId;
    this.ahead = new FilesAhead(options.dir, options.segmentMaxBytes, options.mayPrepare);
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
  whenPrepared(): Promise<void> {
    return this.ahead.whenPrepared();
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
    await this.ahead.close();
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
    const ready = await this.ahead.take(path);
    const fd = ready?.fd ?? (await openAsync(path, 'wx'));
    const zeroed = ready?.size ?? 0;
    // The new name must survive a power loss too, or its acknowledged frames vanish with it.
    await syncDirAsync(this.options.dir);
    this.active = { id, path, fd, bytes: 0, rows: 0, teams: new Map(), spans: new Map(), intake: 0, frames: 0, memos: [], lastSeq: 0, mayRepeat: false, uuidGen: Infinity, openedAt: this.options.now(), dirty: false, zeroed, writes: 0 };
    if (this.options.durable && !this.closed) this.ahead.prepare(this.lastSealed);
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
}
