import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isOutOfMemory, type Database } from '../../db';
import { deadLetterDir, deadLetterSegmentFile } from '../log/dead-letters';
import { syncFile } from '../log/fs-sync';
import { MarkWaiters } from '../mark-waiters';
import { oldestUuidGen, type RecentUuids } from './recent-uuids';
import { loadSegments, markApplied, salvageSegment, type LoadOptions, type LoadResult, type PriorRows } from './flush';
import { parquetRoot } from '../tiers/parquet';
import { mergePropertyKeys } from '../process/processed-copy';
import type { Queued } from '../process/processor';
import { ANY_TEAM } from '../log/recovery';
import { observe } from '../../../core/metrics/histogram';
import { countFailure, MiB, type Counters, type Settings } from '../settings';
import type { Tiers } from '../tiers/tiers';
import { bytesOf, loadBytesOf, mergeSpans, type SealedSegment, type TimeSpan } from '../log/segments';

/**
 * Loads smaller than this leave the load speed (`bytesPerSec`) as it is: their time is mostly
 * a load's fixed cost, and a quiet server's small loads would make a large request look slow.
 */
const SPEED_MIN_BYTES = 4 * MiB;

/** A segment loaded alone is dead-lettered for lack of memory only after this many times `maxFlushAttempts` tries. */
const OUT_OF_MEMORY_ATTEMPTS = 4;

/**
 * The loading stage: puts processed segments (processor.ts) into DuckDB, oldest first,
 * one batch at a time, each with its watermark in one transaction (`flush.ts`), or into the
 * sink's table.
 * A failed load keeps its segments (the files stay; the next attempt comes after a backoff):
 * the batch is retried one segment at a time, a segment DuckDB refuses is salvaged row by row,
 * and one that still fails after `maxFlushAttempts` is moved whole to the dead letters, so a
 * poisoned segment never blocks the ones behind it.
 */
export class SegmentLoader {
  /** Processed, not yet loaded. */
  private queue: Queued[] = [];
  private running: Promise<void> | null = null;
  private nextAt = 0;
  private failures = 0;
  private waiters = new MarkWaiters();
  /** Highest segment id loaded or dead-lettered, in order: everything at or below it is done. */
  done: number;
  /** Recent load speed, for Retry-After estimates and whether a query can see its events in time. */
  bytesPerSec = 50 * MiB;
  /** The running load: when it began (`performance.now()`) and its segments' bytes; null: none runs. */
  private runningLoad: { since: number; bytes: number } | null = null;
  /** Load one segment at a time (a load ran out of memory), until one goes in. */
  private narrow = false;

  constructor(
    private readonly db: Database,
    private readonly s: Settings,
    private readonly tiers: Tiers,
    private readonly counters: Counters,
    appliedSegment: number,
    /** The uuids taken lately: a load of rows certainly new skips the reads they vouch for. */
    private readonly recent: RecentUuids,
    /** Gives back what DuckDB holds for changes not yet checkpointed (maintenance's checkpoint). */
    private readonly relieveMemory: () => Promise<void> = async () => undefined,
  ) {
    this.done = appliedSegment;
  }

  /** Processed segments not loaded yet, oldest first. */
  get segments(): readonly Queued[] {
    return this.queue;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** Bytes of the processed segments not loaded yet (every capture request asks: no arrays made). */
  get bytes(): number {
    return bytesOf(this.queue);
  }

  /** A processed segment, in log order. */
  enqueue(seg: Queued): void {
    this.queue.push(seg);
    this.kick();
  }

  /** Start loading what is processed, unless a load runs or the last one failed recently. */
  kick(): void {
    if (this.running || this.queue.length === 0 || this.s.now() < this.nextAt) return;
    this.running = this.loadBatch()
      .catch((error) => this.s.log.error('event load failed', { error: String(error) }))
      .finally(() => {
        this.running = null;
        this.runningLoad = null;
        if (this.queue.length > 0 && this.s.now() >= this.nextAt) this.kick();
      });
  }

  /**
   * Load every processed segment; returns once each is loaded or dead-lettered (true).
   * `untilFailure` (the store closing): a failed load (or one failed before, waiting for its
   * retry) ends the drain (false), instead of retries that end in the dead letters. What is left
   * stays in the log and the next start loads it, so a server stopped while its disk or
   * ClickHouse refuses leaves nothing for an operator to replay.
   */
  async drain(untilFailure = false): Promise<boolean> {
    while (this.queue.length > 0) {
      if (!this.running) {
        if (untilFailure && this.nextAt > this.s.now()) return false;
        const wait = this.nextAt - this.s.now();
        if (wait > 0) {
          await Bun.sleep(wait);
          this.nextAt = 0; // waited out on a real timer (a manual clock may not have moved)
        }
        this.kick();
      }
      if (this.running) await this.running;
    }
    return true;
  }

  /**
   * Whether segment `seg` would be loaded only after `ms` at the recent speed (`bytesPerSec`,
   * measured on large loads), with `aheadBytes` still to be processed before it (segments not
   * processed yet, one still to be sealed): loads run one at a time and in order, so everything
   * up to it comes first, less what the running load has done.
   */
  late(seg: number, aheadBytes: number, ms: number): boolean {
    const ahead = aheadBytes + bytesOf(this.queue, seg);
    const msFor = (bytes: number) => (bytes / this.bytesPerSec) * 1000;
    const running = this.runningLoad;
    const done = running ? Math.min(performance.now() - running.since, msFor(running.bytes)) : 0;
    return msFor(ahead) - done > ms;
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
    let bytes = 0;
    for (const seg of this.queue) {
      if (batch.length > 0 && (this.narrow || bytes + loadBytesOf(seg) > this.s.loadMaxBytes)) break;
      batch.push(seg);
      rows += seg.rows;
      bytes += loadBytesOf(seg);
    }
    if (batch.length === 0) return;
    const started = performance.now();
    this.runningLoad = { since: started, bytes: bytesOf(batch) };
    try {
      await this.s.hooks.beforeLoad?.(batch);
      const watermark = batch[batch.length - 1].id;
      const result = await this.loadFiles(batch, watermark, rows);
      await this.loaded(batch, result, rows, started);
      this.narrow = false;
    } catch (error) {
      this.failed(error);
      if (isOutOfMemory(error)) return this.outOfMemory(batch[0], batch.length, error);
      // Isolate: the first segment on its own, salvaging its good rows if DuckDB refuses some.
      await this.loadAlone(batch[0]);
    }
  }

  /**
   * A load found DuckDB at its memory cap. That is no fault of the rows, so they are neither
   * salvaged (which holds the segment in memory once more) nor sent to the dead letters: DuckDB
   * is told to checkpoint (what it has not checkpointed, it also holds in memory) and the load
   * is tried again after the usual backoff, one segment at a time until one goes in. Only a
   * segment that still fails alone, `OUT_OF_MEMORY_ATTEMPTS` times over, is dead-lettered.
   */
  private async outOfMemory(seg: Queued, segments: number, error: unknown): Promise<void> {
    this.s.log.warn('event load out of memory: retried after a checkpoint', { segment: seg.id, segments, error: String(error) });
    await this.relieveMemory();
    if (segments === 1 && ++seg.attempts >= this.s.maxFlushAttempts * OUT_OF_MEMORY_ATTEMPTS) return this.deadLetter(seg, error);
    this.narrow = true;
    this.nextAt = this.s.now() + Math.min(10_000, this.s.flushRetryMs * 2 ** (this.failures - 1));
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
        if (isOutOfMemory(error)) {
          this.failed(error);
          return this.outOfMemory(seg, 1, error);
        }
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
   * The files of the batch's teams holding rows loaded within the dedupe window (any event
   * time) and every older file of those teams whose time range overlaps the batch's events: a
   * client retry carries its original's uuid and timestamp, so however late it comes its
   * original is in one of them.
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
    countFailure(this.counters, error);
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
