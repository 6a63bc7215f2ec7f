import { readFile, rm } from 'node:fs/promises';
import type { Database } from '../db';
import { deadLetterDir, deadLetterSegmentFile, writeDeadLetter } from './dead-letters';
import { syncFile } from './fs-sync';
import { MarkWaiters } from './mark-waiters';
import { join } from 'node:path';
import { oldestUuidGen, RecentUuids } from './recent-uuids';
import { loadSegments, markApplied, salvageSegment, type LoadOptions, type LoadResult, type PriorRows } from './flush';
import { parquetRoot } from './parquet';
import { mergePropertyKeys, newProcState, type ProcState } from './processed-copy';
import { ANY_TEAM } from './recovery';
import { observe } from '../../core/metrics/histogram';
import { MiB, type Counters, type Settings } from './settings';
import type { Tiers } from './tiers';
import { decodeIntakeFrame, scanFrames, type IntakeContext, type ScannedFrame } from './wal-format';
import type { EncodedRows, ProcessIntake } from './types';
import { mergeSpans, PROCESSED_SUFFIX, type SealedSegment, type TimeSpan } from './wal';

type Queued = SealedSegment & { attempts: number; loadPath: string };

/**
 * What a kept intake memo holds: the frame's context, its sequence number, and one of: its rows
 * being prepared in another thread since receipt (`prepared`), or its events already parsed.
 */
export type IntakeMemo = { context: IntakeContext; bytes: number; seq: number } & ({ prepared: Promise<unknown>; events: null } | { prepared: null; events: unknown[] });

/**
 * Loads smaller than this leave the load speed (`bytesPerSec`) as it is: their time is mostly
 * a load's fixed cost, and a quiet server's small loads would make a large request look slow.
 */
const SPEED_MIN_BYTES = 4 * MiB;

/** Main-thread time per slice of processing before it yields to requests. */
const SLICE_MS = 4;

/**
 * Two stages, each single-flight and in log order. **Processing** turns a sealed segment's
 * intake frames (capture requests, acknowledged once durable) into rows — normalization,
 * persons and definitions, through the intake processor the store was given — and writes them with the segment's row
 * frames to its processed copy (`.proc`, derived: recovery deletes it and processes again). It
 * runs in slices of a few milliseconds so requests keep being answered meanwhile. **Loading**
 * puts processed segments into DuckDB, oldest first, one batch at a time.
 * A failed load keeps its segments (the files stay; the next attempt comes after a backoff):
 * the batch is retried one segment at a time, a segment DuckDB refuses is salvaged row by row,
 * and one that still fails after `maxFlushAttempts` is moved whole to the dead letters, so a
 * poisoned segment never blocks the ones behind it.
 */
export class SegmentLoader {
  /** Sealed, not yet processed (FIFO). */
  private intake: Queued[] = [];
  private processing: Promise<void> | null = null;
  private processAgain = false;
  /** Processing progress of segments begun from memory (the active one, or just sealed). */
  private states = new Map<number, ProcState>();
  /** Processed, not yet loaded. */
  private queue: Queued[] = [];
  private running: Promise<void> | null = null;
  private processedWaiters = new MarkWaiters();
  /** Highest intake sequence number processed: its person changes are visible. */
  processedSeq = 0;
  /** Bytes of intake memos held (released as their segments are processed). */
  memoBytes = 0;
  /** The uuids taken lately: processed rows are added as they are made (the store adds row frames'). */
  recent: RecentUuids;
  private nextAt = 0;
  private failures = 0;
  private waiters = new MarkWaiters();
  /** Highest segment id loaded or dead-lettered, in order: everything at or below it is done. */
  done: number;
  /** Recent load speed, for Retry-After estimates and whether a query can see its events in time. */
  bytesPerSec = 50 * MiB;
  /** The running load: when it began (`performance.now()`) and its segments' bytes; null: none runs. */
  private runningLoad: { since: number; bytes: number } | null = null;

  constructor(
    private readonly db: Database,
    private readonly s: Settings,
    private readonly tiers: Tiers,
    private readonly counters: Counters,
    appliedSegment: number,
    /** Turns each intake frame into rows (the pipeline); without it a segment holding intake frames cannot be loaded. */
    private readonly process: ProcessIntake | null,
    /** The log's segment being written, for processing frames as they become durable. */
    private readonly activeSegment: () => Readonly<SealedSegment> | null,
  ) {
    this.done = appliedSegment;
    this.recent = new RecentUuids(s.dedupeFilterRows, 8);
  }

  get segments(): readonly Queued[] {
    return [...this.intake, ...this.queue];
  }

  /** How many sealed segments wait to be processed or loaded (no array made: maintenance asks every tick). */
  get waiting(): number {
    return this.intake.length + this.queue.length;
  }

  /** Bytes of the sealed segments not yet loaded (every capture request asks: no arrays made). */
  get bytes(): number {
    return bytesOf(this.intake) + bytesOf(this.queue);
  }

  get rows(): number {
    return this.segments.reduce((n, seg) => n + seg.rows, 0);
  }

  /** Epoch ms when the oldest segment waiting here was opened (null: none waits). */
  get oldestOpenedAt(): number | null {
    let oldest: number | null = null;
    for (const seg of this.segments) if (seg.openedAt !== undefined && (oldest === null || seg.openedAt < oldest)) oldest = seg.openedAt;
    return oldest;
  }

  enqueue(seg: SealedSegment): void {
    // A segment found by recovery has waited at least since this start.
    this.intake.push({ ...seg, openedAt: seg.openedAt ?? this.s.now(), attempts: 0, loadPath: seg.path });
    this.kickProcess();
  }

  /** Resolves once intake sequence number `seq` is processed (or after `timeoutMs`). */
  async waitProcessed(seq: number, timeoutMs: number): Promise<void> {
    if (seq <= this.processedSeq) return;
    this.kickProcess();
    await this.processedWaiters.wait(seq, timeoutMs);
  }

  /** Called by the log after appends resolve: process what became durable. */
  kickProcess(): void {
    if (this.processing) {
      this.processAgain = true;
      return;
    }
    this.processing = (async () => {
      do {
        this.processAgain = false;
        while (this.intake.length > 0) {
          const seg = this.intake[0];
          try {
            await this.finishSegment(seg);
          } catch (error) {
            // The segment's file could not be read or its processed copy written (the disk):
            // retried on later ticks; after maxFlushAttempts the segment goes to the dead
            // letters whole (as it was logged) so the ones behind it are not held forever.
            seg.attempts++;
            this.failed(error);
            if (seg.attempts < this.s.maxFlushAttempts) throw error;
            await this.deadLetterUnprocessed(seg, error);
            continue;
          }
          this.intake.shift();
          this.queue.push(seg);
          this.advance(seg.lastSeq);
          this.kick();
        }
        const active = this.activeSegment();
        if (active && active.intake > 0) await this.processActive(active);
      } while (this.processAgain || this.intake.length > 0);
    })()
      .catch((error) => {
        this.s.log.error('event segment processing failed; will retry', { error: String(error) });
      })
      .finally(() => {
        this.processing = null;
      });
  }

  /**
   * Between slices, requests waiting on the event loop are answered. Processing does not step
   * aside for a burst beyond that: what is acknowledged is stored as fast as it comes, and when
   * the machine cannot keep up the log's cap answers 503 rather than let a backlog grow.
   */
  private yieldToRequests(): Promise<void> {
    return new Promise<void>((resolve) => setImmediate(resolve));
  }

  private advance(seq: number): void {
    if (seq <= this.processedSeq) return;
    this.processedSeq = seq;
    this.processedWaiters.release(seq);
  }

  private stateOf(seg: Readonly<SealedSegment>): ProcState {
    let st = this.states.get(seg.id);
    if (!st) this.states.set(seg.id, (st = newProcState(this.recent, `${seg.path}${PROCESSED_SUFFIX}`)));
    return st;
  }

  /** Discard a segment's processing so far (its copy is written again from the start). */
  private async dropState(segId: number): Promise<void> {
    const st = this.states.get(segId);
    this.states.delete(segId);
    await st?.writer.abandon();
  }

  /**
   * Frames of the segment still being written, taken from memory as their groups become
   * durable: persons and definitions follow acknowledged events within milliseconds, whatever
   * the segment's age. Stops at a frame without a memo (memory budget, a row frame); the rest
   * is done from the file once the segment is sealed.
   */
  private async processActive(seg: Readonly<SealedSegment>): Promise<void> {
    const memos = seg.memos;
    if (!memos) return;
    const st = this.stateOf(seg);
    let sliceStart = performance.now();
    while (st.next < memos.length) {
      const memo = memos[st.next] as IntakeMemo | null;
      if (!memo) return;
      await this.processMemo(seg, st, memo, memos);
      if (performance.now() - sliceStart > SLICE_MS) {
        await this.yieldToRequests();
        sliceStart = performance.now();
        if (this.intake.some((q) => q.id === seg.id)) return; // sealed meanwhile: finished from the queue
      }
    }
  }

  /** A request's rows, its dropped events counted on the way (reasons are the processor's). */
  private counted(rows: EncodedRows): EncodedRows {
    if (rows.dropped) for (const [reason, n] of Object.entries(rows.dropped)) this.counters.droppedEvents[reason] = (this.counters.droppedEvents[reason] ?? 0) + n;
    return rows;
  }

  private async processMemo(seg: Readonly<SealedSegment>, st: ProcState, memo: IntakeMemo, memos: unknown[]): Promise<void> {
    try {
      st.add(this.counted(await this.process!(memo.context, memo.events, null, memo.prepared)));
    } catch (error) {
      st.failed.push({ index: st.next, error });
    }
    memos[st.next] = null; // processed: release the parsed events (or the body)
    this.memoBytes -= memo.bytes;
    st.next++;
    this.advance(memo.seq);
  }

  /**
   * The segment's memos when they match its file frame for frame, else null. The log's count of
   * frames written vouches for them without reading the file (`vouched`) when every frame written
   * was acknowledged and none from `next` on lacks a memo; otherwise the file is read and counted.
   */
  private static vouched(seg: Queued, next: number): boolean {
    const memos = seg.memos;
    return memos !== undefined && seg.frames === memos.length && !memos.some((m, i) => i >= next && m === null);
  }

  /**
   * Write the processed copy of a sealed segment holding intake frames (one without any is
   * loaded as it is): the frames processed from memory already, the rest from the file. A frame
   * whose processing throws is moved to the dead letters (as its raw frame, which `dlq replay`
   * logs again) and the rest of the segment goes on.
   */
  private async finishSegment(seg: Queued): Promise<void> {
    if (seg.intake === 0) return;
    if (!this.process) throw new Error('The event store has no intake processor.');
    let st = this.stateOf(seg);
    const vouched = SegmentLoader.vouched(seg, st.next);
    const read = segmentFile(seg.path, vouched ? seg.memos!.length : null, () => this.counters.segmentsReadBack++);
    const memos = vouched || (seg.memos && seg.memos.length === (await read()).frames.length) ? seg.memos! : null;
    if (!memos && st.next > 0) {
      // The file and the memos disagree (a failed sync rotated the segment): start over from
      // the file. Person changes are idempotent; rows made so far were never loaded.
      await this.dropState(seg.id);
      st = this.stateOf(seg);
    }
    const deadLetterFailed = async () => {
      if (st.failed.length === 0) return;
      const { data, frames } = await read();
      for (const failure of st.failed) {
        const f = frames[failure.index];
        await this.deadLetterFrame(seg, data.subarray(f.start, f.end), f.start, f.rows, failure.error);
      }
      st.failed = [];
    };
    await deadLetterFailed();
    const count = memos ? memos.length : (await read()).frames.length;
    let sliceStart = performance.now();
    while (st.next < count) {
      const memo = memos?.[st.next] as IntakeMemo | null | undefined;
      if (memo) {
        await this.processMemo(seg, st, memo, memos!);
      } else {
        const { data, frames } = await read();
        const f = frames[st.next];
        if (f.kind === 'rows') {
          st.addFrame(data.subarray(f.start, f.end), f.rows);
        } else {
          try {
            const { context, text } = decodeIntakeFrame(data, f);
            st.add(this.counted(await this.process(context, null, text)));
          } catch (error) {
            await this.deadLetterFrame(seg, data.subarray(f.start, f.end), f.start, f.rows, error);
          }
        }
        st.next++;
      }
      await deadLetterFailed();
      if (performance.now() - sliceStart > SLICE_MS) {
        await this.yieldToRequests();
        sliceStart = performance.now();
      }
    }
    st.flush();
    if (seg.memos) for (const m of seg.memos) if (m) this.memoBytes -= (m as IntakeMemo).bytes;
    seg.memos = undefined;
    // Done with this state whatever happens: a failed copy is made again from the start.
    this.states.delete(seg.id);
    await st.writer.finish();
    seg.loadPath = st.writer.path;
    seg.rows = st.rows;
    seg.spans = st.spans;
    seg.mayRepeat = seg.mayRepeat !== false || st.mayRepeat;
    seg.uuidGen = Math.min(seg.uuidGen ?? -Infinity, st.uuidGen);
    if (st.spans) seg.teams = new Map([...st.spans.keys()].map((team) => [team, 1]));
    seg.propertyKeys = st.keys;
    seg.checkedJson = !st.rowFrames;
  }

  private async deadLetterUnprocessed(seg: Queued, error: unknown): Promise<void> {
    this.s.log.error('event segment could not be processed; moved to the dead letters', { segment: seg.id, error: String(error) });
    await deadLetterSegmentFile(
      this.s.dataDir,
      seg.path,
      { id: `seg-${seg.id}`, reason: `Processing WAL segment ${seg.id} failed ${this.s.maxFlushAttempts} times: ${String(error)}`, rows: seg.rows, source: 'segment', segment: seg.id },
      seg.bytes,
    );
    // Moved: from here on the segment is the dead letter's. A processed copy is only derived.
    await this.dropState(seg.id);
    await rm(`${seg.path}${PROCESSED_SUFFIX}`, { recursive: true, force: true }).catch(() => undefined);
    if (seg.memos) for (const m of seg.memos) if (m) this.memoBytes -= (m as IntakeMemo).bytes;
    this.counters.deadLetters++;
    // Not marked done: segments before it may still be loading. Queries stop waiting for it
    // (it is no longer queued), and the next load's watermark passes it.
    this.intake.shift();
    this.advance(seg.lastSeq);
  }

  private async deadLetterFrame(seg: Queued, frame: Uint8Array, offset: number, events: number, error: unknown): Promise<void> {
    this.s.log.error('capture request could not be processed; moved to the dead letters', { segment: seg.id, offset, error: String(error) });
    await writeDeadLetter(
      this.s.dataDir,
      { id: `intake-${seg.id}-${offset}`, reason: `Processing a capture request of WAL segment ${seg.id} failed: ${String(error)}`, rows: events, source: 'intake', segment: seg.id },
      frame,
    );
    this.counters.deadLetters++;
  }

  /** Start loading what is processed, unless a load runs or the last one failed recently. */
  kick(): void {
    this.kickProcess();
    if (this.running || this.queue.length === 0 || this.s.now() < this.nextAt) return;
    this.running = this.loadBatch()
      .catch((error) => this.s.log.error('event load failed', { error: String(error) }))
      .finally(() => {
        this.running = null;
        this.runningLoad = null;
        if (this.queue.length > 0 && this.s.now() >= this.nextAt) this.kick();
      });
  }

  /** Process and load every queued segment; returns once each is loaded or dead-lettered. */
  async drain(): Promise<void> {
    while (this.intake.length > 0 || this.queue.length > 0) {
      if (this.intake.length > 0) {
        this.kickProcess();
        if (this.processing) await this.processing;
        if (this.intake.length > 0) await Bun.sleep(Math.max(10, this.s.flushRetryMs));
        continue;
      }
      if (!this.running) {
        const wait = this.nextAt - this.s.now();
        if (wait > 0) {
          await Bun.sleep(wait);
          this.nextAt = 0; // waited out on a real timer (a manual clock may not have moved)
        }
        this.kick();
      }
      if (this.running) await this.running;
    }
  }

  /**
   * Whether segment `seg` (and `moreBytes` after it: a segment still to be sealed) would be loaded
   * only after `ms` at the recent speed (`bytesPerSec`, measured on large loads): loads run one at
   * a time and in order, so everything up to it comes first, less what the running load has done.
   */
  late(seg: number, moreBytes: number, ms: number): boolean {
    const upTo = (q: SealedSegment) => q.id <= seg;
    const ahead = bytesOf(this.intake.filter(upTo)) + bytesOf(this.queue.filter(upTo));
    const msFor = (bytes: number) => (bytes / this.bytesPerSec) * 1000;
    const running = this.runningLoad;
    const done = running ? Math.min(performance.now() - running.since, msFor(running.bytes)) : 0;
    return msFor(ahead + moreBytes) - done > ms;
  }

  /** Resolves once segment `seg` is done (or after `timeoutMs`). */
  async waitFor(seg: number, timeoutMs: number): Promise<void> {
    if (seg <= this.done) return;
    this.kick();
    await this.waiters.wait(seg, timeoutMs);
  }

  private async loadBatch(): Promise<void> {
    const batch: Queued[] = [];
    let rows = 0;
    for (const seg of this.queue) {
      if (batch.length > 0 && rows + seg.rows > this.s.flushMaxRows) break;
      batch.push(seg);
      rows += seg.rows;
    }
    if (batch.length === 0) return;
    const started = performance.now();
    this.runningLoad = { since: started, bytes: bytesOf(batch) };
    try {
      await this.s.hooks.beforeLoad?.(batch);
      const watermark = batch[batch.length - 1].id;
      const result = await this.loadFiles(batch, watermark, rows);
      await this.loaded(batch, result, rows, started);
    } catch (error) {
      this.failed(error);
      // Isolate: the first segment on its own, salvaging its good rows if DuckDB refuses some.
      await this.loadAlone(batch[0]);
    }
  }

  private async loadAlone(seg: Queued): Promise<void> {
    const started = performance.now();
    this.runningLoad = { since: started, bytes: seg.bytes };
    try {
      await this.s.hooks.beforeLoad?.([seg]);
      let result: LoadResult;
      try {
        result = await this.loadFiles([seg], seg.id, seg.rows);
      } catch (error) {
        // A sink's refusal is retried whole, then dead-lettered: salvaging rows is DuckDB's.
        if (this.s.sink) throw error;
        this.s.log.warn('event segment refused, salvaging its rows', { segment: seg.id, error: String(error) });
        const salvaged = await salvageSegment(this.db, this.s.dataDir, { id: seg.id, path: seg.loadPath }, parquetRoot(this.s.dataDir), this.prior([seg]));
        if (salvaged.rejected > 0) this.counters.deadLetters++;
        result = { inserted: salvaged.inserted, files: [] };
      }
      await this.loaded([seg], result, seg.rows, started);
    } catch (error) {
      seg.attempts++;
      this.failed(error);
      if (seg.attempts < this.s.maxFlushAttempts) {
        this.nextAt = this.s.now() + Math.min(10_000, this.s.flushRetryMs * 2 ** (this.failures - 1));
        return;
      }
      await this.deadLetter(seg, error);
    }
  }

  /** Load the segments' rows (a batch whose requests all came to nothing only moves the watermark). */
  private async loadFiles(batch: readonly Queued[], watermark: number, rows: number): Promise<LoadResult> {
    const files = batch.filter((seg) => seg.rows > 0).map((seg) => seg.loadPath);
    if (files.length === 0) return markApplied(this.db, watermark).then(() => ({ inserted: 0, files: [] }));
    if (!this.s.sink) return loadSegments(this.db, files, watermark, this.options(batch, rows));
    // The sink's table reads a repeated row once, so its insert may come again (a crash before
    // the watermark moves replays the batch): the watermark moves after it.
    const inserted = await this.s.sink.load(files, watermark);
    await markApplied(this.db, watermark);
    return { inserted, files: [] };
  }

  /** Large loads go straight to Parquet; uuids are checked against the files a retry's original may be in. */
  private options(batch: readonly SealedSegment[], rows: number): LoadOptions {
    const fresh = batch.every((seg) => seg.mayRepeat === false);
    if (fresh) this.counters.freshLoads++;
    const prior = this.prior(batch, fresh);
    this.counters.priorFilesRead += prior.recent.length + prior.older.length;
    return {
      toParquet: rows >= this.s.directMinRows,
      root: parquetRoot(this.s.dataDir),
      prior,
      now: this.s.now,
      checkedJson: batch.every((seg) => seg.checkedJson === true),
      propertyKeys: mergePropertyKeys(batch.map((seg) => seg.propertyKeys)),
    };
  }

  /**
   * The newest files of the batch's teams (the dedupe window, any event time) and every older
   * file of those teams whose time range overlaps the batch's events: a client retry carries
   * its original's uuid and timestamp, so however late it comes its original is in one of them.
   * Segments whose teams or spans are unknown (recovery, dead-letter replays) check every file.
   */
  private prior(batch: readonly SealedSegment[], fresh = false): PriorRows {
    let spans: Map<number, TimeSpan> | undefined = new Map();
    for (const seg of batch) spans = seg.teams.has(ANY_TEAM) ? undefined : mergeSpans(spans, seg.spans);
    const teams = spans ? new Set(spans.keys()) : null;
    const recent = this.tiers.recentFiles(teams, this.s.now() - this.s.dedupeWindowMs, this.s.dedupeWindowRows);
    const seen = new Set(recent.map((f) => f.path));
    const older = this.tiers.snapshot.files.filter((f) => {
      if (seen.has(f.path)) return false;
      if (!spans) return true;
      const span = spans.get(f.teamId);
      return span !== undefined && f.maxTs >= span[0] && f.minTs <= span[1];
    });
    let span: [number, number] | null = null;
    if (spans) for (const [lo, hi] of spans.values()) span = span ? [Math.min(span[0], lo), Math.max(span[1], hi)] : [lo, hi];
    if (!fresh) return { recent, older, span };
    // Certainly new to the rows the filter holds: files and hot rows all of whose rows it holds
    // need no reading.
    const oldest = this.recent.oldestGeneration;
    const uncovered = (f: { uuidGen?: number }) => (f.uuidGen ?? -Infinity) < oldest;
    const hotCovered = oldestUuidGen(this.tiers.hotGens) >= oldest;
    return { recent: recent.filter(uncovered), older: older.filter(uncovered), span, fresh, hotCovered };
  }

  private failed(error: unknown): void {
    this.failures++;
    this.counters.flushFailures++;
    this.counters.lastFlushError = String(error);
  }

  private async deadLetter(seg: Queued, error: unknown): Promise<void> {
    this.s.log.error('event segment moved to the dead letters', { segment: seg.id, rows: seg.rows, error: String(error) });
    // A processed copy stands for its segment from here on: durable before the log's file goes.
    const processed = seg.loadPath !== seg.path;
    if (processed) syncFile(seg.loadPath);
    await deadLetterSegmentFile(
      this.s.dataDir,
      seg.loadPath,
      { id: `seg-${seg.id}`, reason: `Loading WAL segment ${seg.id} failed ${this.s.maxFlushAttempts} times: ${String(error)}`, rows: seg.rows, source: 'segment', segment: seg.id },
      processed ? Bun.file(join(deadLetterDir(this.s.dataDir), `seg-${seg.id}.wal`)).size : seg.bytes,
    );
    if (processed) await rm(seg.path, { force: true });
    this.counters.deadLetters++;
    this.queue = this.queue.filter((x) => x !== seg);
    this.markDone(seg.id);
  }

  private async loaded(batch: Queued[], result: LoadResult, rows: number, started: number): Promise<void> {
    const watermark = batch[batch.length - 1].id;
    const uuidGen = oldestUuidGen(batch);
    this.tiers.addFiles(result.files.map((f) => ({ ...f, uuidGen })));
    // With a sink nothing of a load stays in DuckDB: no hot rows to track.
    if (result.inserted > 0 && result.files.length === 0 && !this.s.sink) {
      this.tiers.hot.push({ seg: watermark, rows: result.inserted, at: this.s.now() });
      this.tiers.hotGens.push({ seg: watermark, uuidGen });
    }
    this.queue = this.queue.filter((x) => !batch.includes(x));
    this.failures = 0;
    this.nextAt = 0;
    this.counters.flushes++;
    this.counters.flushedRows += result.inserted;
    this.counters.duplicateRowsSkipped += rows - result.inserted;
    const secs = Math.max(0.001, (performance.now() - started) / 1000);
    const bytes = bytesOf(batch);
    if (bytes >= SPEED_MIN_BYTES) this.bytesPerSec = 0.7 * this.bytesPerSec + 0.3 * Math.max(MiB, bytes / secs);
    observe(this.counters.workSeconds.load, secs);
    // Debug, not info: under a steady stream there is a load every second or so.
    this.s.log.debug('event segments loaded', {
      segments: batch.length,
      rows,
      inserted: result.inserted,
      duplicates: rows - result.inserted,
      bytes,
      parquetFiles: result.files.length,
      ms: Math.round(secs * 1000),
    });
    // Committed: the files are no longer needed (recovery would delete them anyway).
    for (const seg of batch) {
      await rm(seg.path, { force: true });
      if (seg.loadPath !== seg.path) await rm(seg.loadPath, { force: true });
    }
    this.markDone(watermark);
  }

  private markDone(seg: number): void {
    this.done = Math.max(this.done, seg);
    this.waiters.release(this.done);
  }
}

function bytesOf(segments: readonly SealedSegment[]): number {
  let n = 0;
  for (const seg of segments) n += seg.bytes;
  return n;
}

/**
 * A sealed segment's file, read at most once, when something must come from it
 * (`SegmentLoader.finishSegment`). `expected`: the frames it must hold because the memos were taken
 * for them, so a file that disagrees is an error (the segment is retried, then dead-lettered).
 */
function segmentFile(path: string, expected: number | null, onRead: () => void): () => Promise<{ data: Buffer; frames: ScannedFrame[] }> {
  let file: { data: Buffer; frames: ScannedFrame[] } | null = null;
  return async () => {
    if (!file) {
      onRead();
      const data = await readFile(path);
      file = { data, frames: scanFrames(data).frames };
      if (expected !== null && file.frames.length !== expected) {
        throw new Error(`${path}: ${file.frames.length} whole frames on disk, ${expected} acknowledged`);
      }
    }
    return file;
  };
}
