import { rm } from 'node:fs/promises';
import type { Database } from '../db';
import { deadLetterSegmentFile } from './dead-letters';
import { loadSegments, salvageSegment, type LoadOptions, type LoadResult, type PriorRows } from './flush';
import { parquetRoot } from './parquet';
import { ANY_TEAM } from './recovery';
import { MiB, type Counters, type Settings } from './settings';
import type { Tiers } from './tiers';
import { mergeSpans, type SealedSegment, type TimeSpan } from './wal';

type Queued = SealedSegment & { attempts: number };

/**
 * Loads sealed WAL segments into DuckDB, oldest first, one batch at a time (single-flight).
 * A failed load keeps its segments (the files stay; the next attempt comes after a backoff):
 * the batch is retried one segment at a time, a segment DuckDB refuses is salvaged row by row,
 * and one that still fails after `maxFlushAttempts` is moved whole to the dead letters, so a
 * poisoned segment never blocks the ones behind it.
 */
export class SegmentLoader {
  private queue: Queued[] = [];
  private running: Promise<void> | null = null;
  private nextAt = 0;
  private failures = 0;
  private waiters: Array<{ seg: number; resolve(): void }> = [];
  /** Highest segment id loaded or dead-lettered, in order: everything at or below it is done. */
  done: number;
  /** Recent load speed, for Retry-After estimates. */
  bytesPerSec = 50 * MiB;

  constructor(
    private readonly db: Database,
    private readonly s: Settings,
    private readonly tiers: Tiers,
    private readonly counters: Counters,
    appliedSegment: number,
  ) {
    this.done = appliedSegment;
  }

  get segments(): readonly Queued[] {
    return this.queue;
  }

  get bytes(): number {
    return this.queue.reduce((n, seg) => n + seg.bytes, 0);
  }

  get rows(): number {
    return this.queue.reduce((n, seg) => n + seg.rows, 0);
  }

  enqueue(seg: SealedSegment): void {
    this.queue.push({ ...seg, attempts: 0 });
    this.kick();
  }

  kick(): void {
    if (this.running || this.queue.length === 0 || Date.now() < this.nextAt) return;
    this.running = this.loadBatch()
      .catch((error) => this.s.log.error('event load failed', { error: String(error) }))
      .finally(() => {
        this.running = null;
        if (this.queue.length > 0 && Date.now() >= this.nextAt) this.kick();
      });
  }

  /** Load every queued segment; returns once each is loaded or dead-lettered. */
  async drain(): Promise<void> {
    while (this.queue.length > 0) {
      if (!this.running) {
        const wait = this.nextAt - Date.now();
        if (wait > 0) await Bun.sleep(wait);
        this.kick();
      }
      if (this.running) await this.running;
    }
  }

  /** Resolves once segment `seg` is done (or after `timeoutMs`). */
  async waitFor(seg: number, timeoutMs: number): Promise<void> {
    if (seg <= this.done) return;
    this.kick();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done = new Promise<void>((resolve) => this.waiters.push({ seg, resolve }));
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    await Promise.race([done, late]);
    clearTimeout(timer);
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
    try {
      await this.s.hooks.beforeLoad?.(batch);
      const watermark = batch[batch.length - 1].id;
      const result = await loadSegments(this.db, batch.map((seg) => seg.path), watermark, this.options(batch, rows));
      await this.loaded(batch, result, rows, started);
    } catch (error) {
      this.failed(error);
      // Isolate: the first segment on its own, salvaging its good rows if DuckDB refuses some.
      await this.loadAlone(batch[0]);
    }
  }

  private async loadAlone(seg: Queued): Promise<void> {
    const started = performance.now();
    try {
      await this.s.hooks.beforeLoad?.([seg]);
      let result: LoadResult;
      try {
        result = await loadSegments(this.db, [seg.path], seg.id, this.options([seg], seg.rows));
      } catch (error) {
        this.s.log.warn('event segment refused, salvaging its rows', { segment: seg.id, error: String(error) });
        const salvaged = await salvageSegment(this.db, this.s.dataDir, seg, parquetRoot(this.s.dataDir), this.prior([seg]));
        if (salvaged.rejected > 0) this.counters.deadLetters++;
        result = { inserted: salvaged.inserted, files: [] };
      }
      await this.loaded([seg], result, seg.rows, started);
    } catch (error) {
      seg.attempts++;
      this.failed(error);
      if (seg.attempts < this.s.maxFlushAttempts) {
        this.nextAt = Date.now() + Math.min(10_000, this.s.flushRetryMs * 2 ** (this.failures - 1));
        return;
      }
      await this.deadLetter(seg, error);
    }
  }

  /** Large loads go straight to Parquet; uuids are checked against the files a retry's original may be in. */
  private options(batch: readonly SealedSegment[], rows: number): LoadOptions {
    return { toParquet: rows >= this.s.directMinRows, root: parquetRoot(this.s.dataDir), prior: this.prior(batch) };
  }

  /**
   * The newest files of the batch's teams (the dedupe window, any event time) and every older
   * file of those teams whose time range overlaps the batch's events: a client retry carries
   * its original's uuid and timestamp, so however late it comes its original is in one of them.
   * Segments whose teams or spans are unknown (recovery, dead-letter replays) check every file.
   */
  private prior(batch: readonly SealedSegment[]): PriorRows {
    let spans: Map<number, TimeSpan> | undefined = new Map();
    for (const seg of batch) spans = seg.teams.has(ANY_TEAM) ? undefined : mergeSpans(spans, seg.spans);
    const teams = spans ? new Set(spans.keys()) : null;
    const recent = this.tiers.recentFiles(teams, Date.now() - this.s.dedupeWindowMs, this.s.dedupeWindowRows);
    const seen = new Set(recent.map((f) => f.path));
    const older = this.tiers.snapshot.files.filter((f) => {
      if (seen.has(f.path)) return false;
      if (!spans) return true;
      const span = spans.get(f.teamId);
      return span !== undefined && f.maxTs >= span[0] && f.minTs <= span[1];
    });
    let span: [number, number] | null = null;
    if (spans) for (const [lo, hi] of spans.values()) span = span ? [Math.min(span[0], lo), Math.max(span[1], hi)] : [lo, hi];
    return { recent, older, span };
  }

  private failed(error: unknown): void {
    this.failures++;
    this.counters.flushFailures++;
    this.counters.lastFlushError = String(error);
  }

  private async deadLetter(seg: Queued, error: unknown): Promise<void> {
    this.s.log.error('event segment moved to the dead letters', { segment: seg.id, rows: seg.rows, error: String(error) });
    await deadLetterSegmentFile(
      this.s.dataDir,
      seg.path,
      { id: `seg-${seg.id}`, reason: `Loading WAL segment ${seg.id} failed ${this.s.maxFlushAttempts} times: ${String(error)}`, rows: seg.rows, source: 'segment', segment: seg.id },
      seg.bytes,
    );
    this.counters.deadLetters++;
    this.queue = this.queue.filter((x) => x !== seg);
    this.markDone(seg.id);
  }

  private async loaded(batch: Queued[], result: LoadResult, rows: number, started: number): Promise<void> {
    const watermark = batch[batch.length - 1].id;
    this.tiers.addFiles(result.files);
    if (result.inserted > 0 && result.files.length === 0) this.tiers.hot.push({ seg: watermark, rows: result.inserted, at: Date.now() });
    this.queue = this.queue.filter((x) => !batch.includes(x));
    this.failures = 0;
    this.nextAt = 0;
    this.counters.flushes++;
    this.counters.flushedRows += result.inserted;
    this.counters.duplicateRowsSkipped += rows - result.inserted;
    const secs = Math.max(0.001, (performance.now() - started) / 1000);
    const bytes = batch.reduce((n, seg) => n + seg.bytes, 0);
    this.bytesPerSec = 0.7 * this.bytesPerSec + 0.3 * Math.max(MiB, bytes / secs);
    this.s.log.info('event segments loaded', { segments: batch.length, rows, inserted: result.inserted, parquetFiles: result.files.length, ms: Math.round(secs * 1000) });
    // Committed: the files are no longer needed (recovery would delete them anyway).
    for (const seg of batch) await rm(seg.path, { force: true });
    this.markDone(watermark);
  }

  private markDone(seg: number): void {
    this.done = Math.max(this.done, seg);
    const ready = this.waiters.filter((w) => w.seg <= this.done);
    this.waiters = this.waiters.filter((w) => w.seg > this.done);
    for (const w of ready) w.resolve();
  }
}
