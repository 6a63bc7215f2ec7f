import { readFile, rm } from 'node:fs/promises';
import { deadLetterSegmentFile, writeDeadLetter } from '../log/dead-letters';
import { MarkWaiters } from '../mark-waiters';
import { newProcState, type ProcState } from './processed-copy';
import type { RecentUuids } from '../load/recent-uuids';
import { countFailure, type Counters, type Settings } from '../settings';
import { decodeIntakeFrame, scanFrames, type ScannedFrame } from '../log/frame-reader';
import type { IntakeContext } from '../types';
import type { EncodedRows, ProcessIntake } from '../types';
import { bytesOf, PROCESSED_SUFFIX, type SealedSegment } from '../log/segments';

/** A sealed segment on its way to the tables: its tries so far, and the file a load reads (its processed copy, once written). */
export type Queued = SealedSegment & { attempts: number; loadPath: string };

/**
 * What a kept intake memo holds: the frame's context, its sequence number, and one of: its rows
 * being prepared in another thread since receipt (`prepared`), its events already parsed, or its
 * body (for a run: `ProcessIntake.run`).
 */
export type IntakeMemo = { context: IntakeContext; bytes: number; seq: number } & (
  | { prepared: Promise<unknown>; events: null }
  | { prepared: null; events: unknown[] }
  | { prepared: null; events: null; body: Uint8Array | string }
);
type BodyMemo = Extract<IntakeMemo, { body: unknown }>;
const isBodyMemo = (memo: IntakeMemo | null | undefined): memo is BodyMemo => memo != null && 'body' in memo;

/** Main-thread time per slice of processing before it yields to requests. */
const SLICE_MS = 4;

/**
 * Body bytes of one run (`processRun`): one message to the preparing thread and back, and the
 * persons of its events applied in one go on this thread, within about a slice.
 */
const RUN_MAX_BYTES = 512 * 1024;

/**
 * How long after one run is sent the next waits for more bodies, when it holds less than
 * RUN_MAX_BYTES: each run wakes the preparing thread, and a wake costs this thread far more than
 * the message itself (see bench/NOTES.md), so under a stream of single events fewer, fuller runs
 * leave more of it to requests. A run long after the one before (a quiet server) goes at once, and
 * so does one that a flag check or a read is waiting for; otherwise persons and definitions follow
 * their events by at most this much more.
 */
const RUN_GATHER_MS = 10;

/**
 * The run starting at `first` (a body memo): the body memos after it, before `end`, of its
 * project, up to RUN_MAX_BYTES; `ended` when something other than `end` stopped it (a memo that
 * is not another body of the project, or the bytes).
 */
function runFrom(memos: readonly unknown[], first: number, end: number): { run: BodyMemo[]; ended: boolean } {
  const teamId = (memos[first] as BodyMemo).context.teamId;
  const run: BodyMemo[] = [];
  let bytes = 0;
  for (let i = first; i < end; i++) {
    const memo = memos[i] as IntakeMemo | null;
    if (bytes >= RUN_MAX_BYTES || !isBodyMemo(memo) || memo.context.teamId !== teamId) return { run, ended: true };
    run.push(memo);
    bytes += memo.bytes;
  }
  return { run, ended: bytes >= RUN_MAX_BYTES };
}

/**
 * The processing stage, between the log and the loads: turns each sealed segment's intake
 * frames (capture requests, acknowledged once durable) into rows — normalization, persons and
 * definitions, through the intake processor the store was given (the pipeline) — and writes them
 * with the segment's row frames to its processed copy (`.proc`, derived: recovery deletes it and
 * processes again), then hands the segment to the loader (`processed`). Single-flight and in log
 * order, in slices of a few milliseconds so requests keep being answered meanwhile. Frames of the
 * segment still being written are processed from memory as they become durable (`processActive`),
 * so persons follow acknowledged events within milliseconds.
 *
 * A frame whose processing throws goes to the dead letters and the rest of its segment goes on;
 * a segment whose file cannot be read or whose copy cannot be written is retried, and after
 * `maxFlushAttempts` moved whole to the dead letters, so it never blocks the ones behind it.
 */
export class SegmentProcessor {
  /** Sealed, not yet processed (FIFO). */
  private intake: Queued[] = [];
  private processing: Promise<void> | null = null;
  private processAgain = false;
  /** Processing progress of segments begun from memory (the active one, or just sealed). */
  private states = new Map<number, ProcState>();
  private processedWaiters = new MarkWaiters();
  /** When the last run was sent to the preparing thread (`performance.now()`). */
  private lastRunAt = Number.NEGATIVE_INFINITY;
  /** Highest intake sequence number processed: its person changes are visible. */
  processedSeq = 0;
  /** Bytes of intake memos held (released as their segments are processed). */
  memoBytes = 0;

  constructor(
    private readonly s: Settings,
    private readonly counters: Counters,
    /** The uuids taken lately: processed rows are added as they are made. */
    private readonly recent: RecentUuids,
    /** Turns each intake frame into rows (the pipeline); without it a segment holding intake frames cannot be processed. */
    private readonly process: ProcessIntake | null,
    /** The log's segment being written, for processing frames as they become durable. */
    private readonly activeSegment: () => Readonly<SealedSegment> | null,
    /** A segment processed, in log order: the loader's. */
    private readonly processed: (seg: Queued) => void,
  ) {}

  /** Sealed segments not processed yet, oldest first. */
  get segments(): readonly Queued[] {
    return this.intake;
  }

  /** Whether consecutive requests are processed as runs (the store then keeps bodies as memos). */
  get runs(): boolean {
    return this.process?.run !== undefined;
  }

  get waiting(): number {
    return this.intake.length;
  }

  /** Bytes of the sealed segments not processed yet (every capture request asks: no arrays made). */
  get bytes(): number {
    return bytesOf(this.intake);
  }

  /** Bytes of the segments up to `seg` not processed yet. */
  bytesUpTo(seg: number): number {
    return bytesOf(this.intake, seg);
  }

  enqueue(seg: SealedSegment): void {
    // A segment found by recovery has waited at least since this start.
    this.intake.push({ ...seg, openedAt: seg.openedAt ?? this.s.now(), attempts: 0, loadPath: seg.path });
    this.kick();
  }

  /** Resolves once intake sequence number `seq` is processed (or after `timeoutMs`). */
  async waitProcessed(seq: number, timeoutMs: number): Promise<void> {
    if (seq <= this.processedSeq) return;
    this.kick();
    await this.processedWaiters.wait(seq, timeoutMs);
  }

  /** Process every sealed segment; returns once each is processed or dead-lettered. */
  async drain(): Promise<void> {
    while (this.intake.length > 0) {
      this.kick();
      if (this.processing) await this.processing;
      if (this.intake.length > 0) await Bun.sleep(Math.max(10, this.s.flushRetryMs));
    }
  }

  /** Called by the log after appends resolve, and on the store's tick: process what became durable. */
  kick(): void {
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
            countFailure(this.counters, error);
            if (seg.attempts < this.s.maxFlushAttempts) throw error;
            await this.deadLetterUnprocessed(seg, error);
            continue;
          }
          this.intake.shift();
          this.advance(seg.lastSeq);
          this.processed(seg);
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
      if (isBodyMemo(memo)) {
        if (await this.gathered(st, memos)) {
          sliceStart = performance.now();
          if (this.sealed(seg)) return;
        }
        await this.processRun(st, memos, memos.length);
      } else await this.processMemo(seg, st, memo, memos);
      if (performance.now() - sliceStart > SLICE_MS) {
        await this.yieldToRequests();
        sliceStart = performance.now();
        if (this.sealed(seg)) return;
      }
    }
  }

  /** The segment was sealed meanwhile: it is finished from the queue. */
  private sealed(seg: Readonly<SealedSegment>): boolean {
    return this.intake.some((q) => q.id === seg.id);
  }

  /** A request's rows, its dropped events counted on the way (reasons are the processor's). */
  private counted(rows: EncodedRows): EncodedRows {
    if (rows.dropped) for (const [reason, n] of Object.entries(rows.dropped)) this.counters.droppedEvents[reason] = (this.counters.droppedEvents[reason] ?? 0) + n;
    return rows;
  }

  private async processMemo(seg: Readonly<SealedSegment>, st: ProcState, memo: Exclude<IntakeMemo, BodyMemo>, memos: unknown[]): Promise<void> {
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
   * Waits, when the bodies from `st.next` on make less than a full run, the last run was sent
   * less than RUN_GATHER_MS ago and nobody waits for processing, until that much time has passed
   * (more bodies become durable meanwhile); whether it waited.
   */
  private async gathered(st: ProcState, memos: readonly unknown[]): Promise<boolean> {
    const wait = this.lastRunAt + RUN_GATHER_MS - performance.now();
    if (wait <= 0 || this.processedWaiters.waiting) return false;
    // A run that ends before the memos do (another project's body, a full run) is as full as waiting would make it.
    if (runFrom(memos, st.next, memos.length).ended) return false;
    await Bun.sleep(wait);
    return true;
  }

  /**
   * The body memos from `st.next` on (before `end`) of one project, up to RUN_MAX_BYTES, turned
   * into rows as one (`ProcessIntake.run`): one message to the preparing thread for the run
   * instead of the work of each on this one. A body that cannot be read goes to the dead letters
   * alone; a run that fails as a whole (its persons could not be applied) sends each of its
   * frames there, as each would have gone alone.
   */
  private async processRun(st: ProcState, memos: unknown[], end: number): Promise<void> {
    const first = st.next;
    const { run } = runFrom(memos, first, end);
    this.lastRunAt = performance.now();
    try {
      if (!this.process!.run) throw new Error('The intake processor has no runs.');
      const { rows, failed } = await this.process!.run(run.map((m) => ({ context: m.context, body: m.body })));
      st.add(this.counted(rows));
      for (const f of failed) st.failed.push({ index: first + f.index, error: f.error });
    } catch (error) {
      for (let i = 0; i < run.length; i++) st.failed.push({ index: first + i, error });
    }
    for (const memo of run) {
      memos[st.next++] = null;
      this.memoBytes -= memo.bytes;
    }
    this.advance(run[run.length - 1].seq);
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
    const vouched = SegmentProcessor.vouched(seg, st.next);
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
      if (isBodyMemo(memo)) {
        await this.processRun(st, memos!, count);
      } else if (memo) {
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
    seg.loadBytes = st.writer.bytes;
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
}

/**
 * A sealed segment's file, read at most once, when something must come from it
 * (`SegmentProcessor.finishSegment`). `expected`: the frames it must hold because the memos were taken
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
