import { join } from 'node:path';
import type { StoredEventRow } from '../../core/events/columns';
import { AppError } from '../../errors';
import { memoryUsage, type Database, type SqlParam } from '../db';
import { migrate } from '../migrations';
import { DiskSpace } from './disk-space';
import { listDeadLetters } from './log/dead-letters';
import { replayDeadLetters } from './log/replay';
import { Admission, REFUSALS } from './admission';
import { ArrivalRate } from './arrival-rate';
import { SegmentLoader } from './load/loader';
import { withinMs } from './mark-waiters';
import { Maintenance } from './tiers/maintenance';
import { loadManifest } from './tiers/manifest';
import { parquetRoot, removeOrphans } from './tiers/parquet';
import { PendingIntake } from './process/pending-intake';
import { SegmentProcessor, type IntakeMemo, type Queued } from './process/processor';
import { RecentUuids } from './load/recent-uuids';
import { loadPersonCopies, personCopyRoot, removeOrphanCopies } from './tiers/person-copies';
import { ANY_TEAM, recoverWal } from './log/recovery';
import { SaturatedThreads } from './tiers/saturated-threads';
import { buildEventsRelation, streamQuery, type EventsRelation, type StreamOptions, type TimeRange } from './read/relation';
import { eventMigrations } from './tiers/schema';
import type { ErasedEvents, PersonMatch } from './tiers/erasure';
import { loadMaxBytesFor, newCounters, resolveSettings, type Settings } from './settings';
import { Tiers } from './tiers/tiers';
import type { EventStore, EventStoreOptions, EventStoreStats, IntakeInput, RelationOptions, ReplayResult } from './types';
import { encodeFrame, intakeParts } from './log/frames';
import { WalWriter } from './log/wal';
import type { SealedSegment, TimeSpan } from './log/segments';

/** How long a wait for persons (cohorts, person lists) waits for unprocessed capture requests by default. */
const PERSONS_WAIT_MS = 15_000;
/** How long deleting a project's events waits for its acknowledged events to be loaded. */
const DELETE_WAIT_MS = 600_000;

/**
 * How long a person's erasure waits for the project's acknowledged events to be loaded before it
 * answers 503 (nothing deleted yet): every event logged before the erasure must be in the
 * tables it rewrites.
 */
const ERASE_WAIT_MS = 60_000;

const holdsTeam = (seg: Readonly<SealedSegment>, teamId: number) => seg.teams.has(teamId) || seg.teams.has(ANY_TEAM);

/**
 * The life of an event: `appendIntake` hands a capture request (its context and body) to the
 * group commit (`wal.ts`), which writes every frame that arrived meanwhile with one write and one
 * fdatasync, then resolves them all: that is the 200. Behind it processing (`processor.ts`) has
 * the store's intake processor (the pipeline) turn each request into encoded rows, in log order,
 * as its group becomes durable, and writes them to the segment's processed copy. Segments of the
 * log are sealed by size or age, and once processed loaded into DuckDB by the loader
 * (`loader.ts`, `flush.ts`): loads of 5,000 rows or more
 * straight to Parquet, smaller ones into the hot table, each with its watermark in one
 * transaction. Background maintenance (`maintenance.ts`) compacts hot rows to Parquet, merges
 * small files and runs checkpoints. Queries get one relation over hot rows and registered
 * Parquet files, after waiting (briefly) for the team's acknowledged rows (`relation.ts`).
 * `append` logs rows already made (dead-letter replays, tests) as row frames on the same path.
 *
 * `createEventStore` applies the migrations, recovers (exactly-once replay of the log, orphan
 * and torn-file cleanup) and resolves once what the log held is loaded.
 */
export async function createEventStore(db: Database, options: EventStoreOptions): Promise<EventStore> {
  await migrate(db, eventMigrations);
  const s = resolveSettings({ ...options, loadMaxBytes: options.loadMaxBytes ?? loadMaxBytesFor((await memoryUsage(db)).limitBytes) });
  const [state] = await db.query<{ applied_segment: number; compacted_segment: number; purged_segment: number }>(
    'SELECT applied_segment, compacted_segment, purged_segment FROM event_store_state WHERE id = 1',
  );
  const files = await loadManifest(db);
  const copies = await loadPersonCopies(db);
  const orphans = (await removeOrphans(s.dataDir, files)) + (await removeOrphanCopies(s.dataDir, copies));
  const recovered = await recoverWal(s.dataDir, join(s.dataDir, 'events', 'wal'), state.applied_segment);
  const tiers = new Tiers({ compactedSegment: state.compacted_segment, files });
  tiers.personCopies = copies;
  const store = new DuckDbEventStore(db, s, tiers, state.applied_segment, recovered.nextId);
  const [hot] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM events_hot WHERE _seg > ${state.compacted_segment}`);
  await store.start({
    hotRows: hot.n,
    purgePending: state.purged_segment < state.compacted_segment ? state.compacted_segment : null,
    segments: recovered.segments,
    deadLetters: (await listDeadLetters(s.dataDir)).length,
  });
  if (recovered.segments.length || recovered.removedApplied || recovered.damagedBytes || orphans) {
    s.log.info('event store recovered', {
      replayedSegments: recovered.segments.length,
      replayedRows: recovered.segments.reduce((n, seg) => n + seg.rows, 0),
      removedLoadedSegments: recovered.removedApplied,
      damagedBytes: recovered.damagedBytes,
      orphanParquetFiles: orphans,
    });
  }
  return store;
}

class DuckDbEventStore implements EventStore {
  private readonly counters = newCounters();
  private readonly wal: WalWriter;
  private readonly processor: SegmentProcessor;
  private readonly loader: SegmentLoader;
  /** The uuids taken lately (recent-uuids.ts): processing adds its rows', `append` its own; loads read it. */
  private readonly recent: RecentUuids;
  private readonly upkeep: Maintenance;
  private readonly threads: SaturatedThreads;
  private readonly root: string;
  private readonly disk: DiskSpace;
  private readonly admission: Admission;
  /** Capture requests numbered in log order (`processor.processedSeq` is the last processed). */
  private intakeSeq = 0;
  /** The distinct ids of logged requests not processed yet, for flag checks and person reads. */
  private readonly pending: PendingIntake;
  /** Whether appends arrive at a saturating rate (maintenance and DuckDB's threads step aside). */
  private readonly arrivals: ArrivalRate;
  private closed = false;
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    private readonly db: Database,
    private readonly s: Settings,
    private readonly tiers: Tiers,
    appliedSegment: number,
    nextSegment: number,
  ) {
    this.root = parquetRoot(s.dataDir);
    this.disk = new DiskSpace(s.dataDir, s.minFreeDiskBytes, s.now);
    this.admission = new Admission(s, this.counters, this.disk, {
      closed: () => this.closed,
      pendingBytes: () => this.pendingBytes(),
      queuedBytes: () => this.wal.queuedBytes,
      loadBytesPerSec: () => this.loader.bytesPerSec,
    });
    this.pending = new PendingIntake(s.maxPendingIds);
    // A rate of real requests (settings.ts: a frozen test clock would hold one window open forever).
    this.arrivals = new ArrivalRate(() => performance.now());
    this.recent = new RecentUuids(s.dedupeFilterRows, 8);
    this.loader = new SegmentLoader(db, s, tiers, this.counters, appliedSegment, this.recent, () => this.upkeep.checkpoint(true));
    this.processor = new SegmentProcessor(s, this.counters, this.recent, s.intake, () => this.wal.activeSegment, (seg) => this.loader.enqueue(seg));
    this.threads = new SaturatedThreads((threads) => db.setThreads(threads), s.saturatedThreads, s.log);
    this.upkeep = new Maintenance(db, s, tiers, this.counters, {
      loadedSegment: () => this.loader.done,
      saturated: () => this.arrivals.saturated(),
      backlog: () => this.processor.waiting + this.loader.waiting > 0,
    });
    this.wal = new WalWriter(
      {
        ...s,
        dir: join(s.dataDir, 'events', 'wal'),
        onSeal: (seg) => this.processor.enqueue(seg),
        onDurable: () => this.processor.kick(),
        // A file made ahead must leave the disk's reserve whole (it is space taken before any request needs it).
        mayPrepare: (bytes) => this.disk.mayTake(bytes),
        beforeSync: s.hooks.beforeLogSync,
      },
      nextSegment,
    );
  }

  async start(state: { hotRows: number; purgePending: number | null; segments: SealedSegment[]; deadLetters: number }): Promise<void> {
    if (state.hotRows > 0) this.tiers.hot.push({ seg: this.loader.done, rows: state.hotRows, at: this.s.now() });
    // Rows in the hot table from before this start (compacted or not): the filter never saw them.
    if (state.hotRows > 0 || state.purgePending !== null) this.tiers.hotGens.push({ seg: this.loader.done, uuidGen: -Infinity });
    if (state.purgePending !== null) this.upkeep.schedulePurge(state.purgePending);
    this.counters.deadLetters = state.deadLetters;
    for (const seg of state.segments) this.processor.enqueue(seg);
    await this.drain();
    await this.disk.check();
    this.timer = setInterval(() => this.tick(), 100);
    (this.timer as { unref?: () => void }).unref?.();
  }

  private tick(): void {
    if (this.closed) return;
    this.processor.kick();
    this.loader.kick();
    void this.disk.tick();
    // Forget distinct ids whose requests are processed, with no capture request to do it.
    this.pending.sweep(this.processor.processedSeq);
    this.threads.note(this.arrivals.saturated(), this.s.now());
    this.upkeep.tick();
  }

  // ---- write path -------------------------------------------------------------------------

  /**
   * Log rows already made (tests, seeding a bench) as one row frame: the same group commit and
   * the same loads as capture requests, without the pipeline. Production logs capture requests
   * (`appendIntake`); dead-letter replays log their frames as they are.
   */
  async append(rows: readonly StoredEventRow[]): Promise<void> {
    if (rows.length === 0) return;
    this.admission.admit(0);
    const frame = encodeFrame(rows);
    this.admission.admit(frame.length);
    this.arrivals.note(frame.length);
    const teams = new Map<number, number>();
    const spans = new Map<number, TimeSpan>();
    for (const r of rows) {
      teams.set(r.teamId, (teams.get(r.teamId) ?? 0) + 1);
      const span = spans.get(r.teamId);
      if (!span) spans.set(r.teamId, [r.timestamp, r.timestamp]);
      else if (r.timestamp < span[0]) span[0] = r.timestamp;
      else if (r.timestamp > span[1]) span[1] = r.timestamp;
    }
    // Certainly new rows let their load skip the dedupe reads the filter covers (recent-uuids.ts).
    // While a capture request logged before them is unprocessed, its rows are not in the filter
    // yet, so these count as possible repeats.
    const uuidGen = this.recent.generation;
    const seen = this.recent.addAll(rows);
    const mayRepeat = seen || this.intakeSeq > this.processor.processedSeq;
    try {
      await this.wal.append([frame], rows.length, teams, { spans, mayRepeat, uuidGen });
    } catch (error) {
      this.admission.writeFailed(error);
    }
    this.counters.appendedRows += rows.length;
  }

  /**
   * Log one capture request (its context and decoded body) and resolve once it is as durable as
   * configured: the 200. Its events become rows behind it, in log order (`processor.ts`). The
   * distinct ids it names are remembered until then, so a flag check for one of them can wait
   * for its person changes (`awaitIntake`).
   */
  appendIntake(input: IntakeInput): Promise<void> {
    // Not an async function: nothing here may keep the parsed events alive until the flush (a
    // large batch's objects would outlive the young generation and be promoted), unless memo'd.
    try {
      // Encoded by the group commit, many requests into one buffer (see encodeIntakeFrames).
      const { body } = input;
      const parts = intakeParts(input.context, body, input.events);
      const bytes = parts.maxBytes;
      this.admission.admit(bytes);
      const seq = ++this.intakeSeq;
      this.pending.note(input.context.teamId, input.distinctIds, seq, this.processor.processedSeq);
      this.arrivals.note(bytes);
      // A memo (the parsed events, or the rows being prepared elsewhere) spares processing a read
      // of the log and a second parse: processing follows the log closely (it no longer stands
      // aside for a burst), so a memo is short-lived; the budget bounds the memory. When runs of
      // requests are prepared in another thread (`ProcessIntake.run`), what that thread needs is
      // the body: the parsed events are let go at once.
      const prepared = input.prepared ?? null;
      let memo: IntakeMemo | null = null;
      if ((prepared || input.parsed) && this.processor.memoBytes + bytes <= this.s.maxMemoBytes) {
        const kept = { context: input.context, bytes, seq };
        if (prepared) memo = { ...kept, prepared, events: null };
        else memo = this.processor.runs ? { ...kept, prepared: null, events: null, body } : { ...kept, prepared: null, events: input.parsed! };
        this.processor.memoBytes += bytes;
      } else prepared?.catch(() => undefined); // unused: processed from the log instead
      const events = input.events;
      return this.wal.append(parts, events, new Map([[input.context.teamId, events]]), { intake: { memo, seq } }).then(
        () => {
          this.counters.appendedRows += events;
        },
        (error: unknown) => {
          if (memo) this.processor.memoBytes -= memo.bytes;
          this.admission.writeFailed(error);
        },
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Whether a logged capture request of the project naming one of these ids is not processed yet (no promise). */
  intakePending(teamId: number, distinctIds: readonly string[]): boolean {
    return this.pending.pending(teamId, distinctIds, this.processor.processedSeq);
  }

  /**
   * Wait (at most `timeoutMs`) until every acknowledged capture request of the project naming
   * one of these distinct ids (ids null: every request of the project; project null: every
   * request) has been processed, so their person changes are visible. Returns at once when none
   * is pending, which is the usual case.
   */
  async awaitIntake(teamId: number | null, distinctIds: readonly string[] | null, timeoutMs = PERSONS_WAIT_MS): Promise<void> {
    const target = this.pending.target(teamId, distinctIds, this.processor.processedSeq, this.intakeSeq);
    if (target === 0) return;
    // Frames of the active segment are processed as they become durable; one the memory
    // budget left without a memo is processed only once its segment is sealed.
    const started = performance.now();
    await this.processor.waitProcessed(target, Math.min(timeoutMs, 200));
    if (this.processor.processedSeq < target) {
      const active = this.wal.activeSegment;
      if (active && active.lastSeq >= target) await this.wal.seal();
      await this.processor.waitProcessed(target, Math.max(0, timeoutMs - (performance.now() - started)));
    }
    this.pending.sweep(this.processor.processedSeq);
  }

  private pendingBytes(): number {
    return this.wal.queuedBytes + (this.wal.activeSegment?.bytes ?? 0) + this.wal.sealingBytes + this.processor.bytes + this.loader.bytes;
  }

  async flush(): Promise<void> {
    await this.wal.seal();
    await this.drain();
  }

  /**
   * Process and load every sealed segment; returns once each is loaded or dead-lettered.
   * `closing`: returns at the first load that fails, the rest left in the log for the next start
   * (`SegmentLoader.drain`).
   */
  private async drain(closing = false): Promise<void> {
    do {
      await this.processor.drain();
      if (!(await this.loader.drain(closing))) return;
    } while (this.processor.waiting > 0 || this.loader.waiting > 0);
  }

  /** Sealed segments not loaded yet, oldest first: processing's, then the loader's. */
  private unloaded(): Queued[] {
    return [...this.processor.segments, ...this.loader.segments];
  }

  async compact(): Promise<void> {
    await this.flush();
    await this.upkeep.runAll();
  }

  checkpoint(): Promise<void> {
    return this.upkeep.exclusive(() => this.upkeep.checkpoint(true));
  }

  // ---- reading ------------------------------------------------------------------------------

  /**
   * Make the team's acknowledged rows visible: seal the active segment if it holds any, then
   * wait until every segment holding the team is loaded, at most `timeoutMs`. A query
   * (`whenLate: 'read'`) does neither when its rows could not be loaded within the bound (a
   * saturating ingest: loads take longer than a query should wait): it reads what is loaded at
   * once, without cutting the log's segment short for rows it would not see anyway. Erasure and
   * deletion wait whatever.
   */
  private async sync(teamId: number, timeoutMs: number, whenLate: 'wait' | 'read' = 'wait'): Promise<number> {
    const active = this.wal.activeSegment;
    const activeHolds = active !== null && active.rows > 0 && holdsTeam(active, teamId);
    if (whenLate === 'read') {
      const target = activeHolds ? active.id : this.lastSegmentOf(teamId);
      if (target > this.loader.done && this.loader.late(target, this.processor.bytesUpTo(target) + (activeHolds ? active.bytes : 0), timeoutMs)) return target;
    }
    const started = performance.now();
    const written = activeHolds ? this.wal.seal() : this.wal.idle();
    // A query reads what is loaded once its bound has passed, also when the log is what holds
    // it up (a stalled disk, or appends so steady that the log's loop is never idle to seal).
    if (whenLate === 'read') await withinMs(written, timeoutMs);
    else await written;
    const target = this.lastSegmentOf(teamId);
    await this.loader.waitFor(target, whenLate === 'read' ? Math.max(0, timeoutMs - (performance.now() - started)) : timeoutMs);
    return target;
  }

  private lastSegmentOf(teamId: number): number {
    let target = 0;
    for (const seg of this.unloaded()) if (holdsTeam(seg, teamId)) target = Math.max(target, seg.id);
    return target;
  }

  async awaitVisible(teamId: number): Promise<void> {
    if (!Number.isSafeInteger(teamId)) throw new AppError('invalid_input', 'Invalid project id.', 'team_id');
    await this.sync(teamId, this.s.visibilityTimeoutMs, 'read');
  }

  async eventsRelation(teamId: number, range?: TimeRange, options: RelationOptions = {}): Promise<EventsRelation> {
    if (!Number.isSafeInteger(teamId)) throw new AppError('invalid_input', 'Invalid project id.', 'team_id');
    if (options.wait !== false) await this.sync(teamId, this.s.visibilityTimeoutMs, 'read');
    // Switched off, copies written before are left unread (and no longer kept up to date).
    const byPerson = options.byPerson && this.s.personCopies.enabled ? { copies: this.tiers.personCopies, root: personCopyRoot(this.s.dataDir) } : undefined;
    return buildEventsRelation(teamId, this.tiers.snapshot, this.root, range, byPerson);
  }

  buildPersonCopies(): Promise<number> {
    return this.upkeep.buildPersonCopies();
  }

  async newestFirstRelation(teamId: number, range: TimeRange, options: Pick<RelationOptions, 'wait'> = {}): Promise<string | null> {
    const relation = await this.eventsRelation(teamId, range, options);
    const scan = relation.newestFirst();
    if (!scan) return null;
    // Hot rows have no order to merge into: the relation is only good when the range has none.
    const [hot] = await this.db.query<{ n: number }>(`SELECT count(*) AS n FROM ${relation.parts([], true)} AS events`);
    return Number(hot?.n ?? 1) === 0 ? scan : null;
  }

  streamQuery(sql: string, params: readonly SqlParam[] = [], options?: StreamOptions) {
    return streamQuery(this.db, sql, params, options);
  }

  holdFiles<T>(fn: () => Promise<T>): Promise<T> {
    return this.upkeep.exclusive(fn);
  }

  retentionChanged(): void {
    this.upkeep.scheduleRetention();
  }

  async awaitLoaded(teamId: number, timeoutMs = ERASE_WAIT_MS): Promise<void> {
    if (!Number.isSafeInteger(teamId)) throw new AppError('invalid_input', 'Invalid project id.', 'team_id');
    const target = await this.sync(teamId, timeoutMs);
    // Loaded or dead-lettered: a segment still waiting is one the wait ran out on.
    if (this.unloaded().some((seg) => seg.id <= target && holdsTeam(seg, teamId))) {
      throw new AppError('unavailable', REFUSALS.backlog, null, { retryAfter: this.admission.backlogRetryAfter() });
    }
  }

  erasePersonEvents(teamId: number, match: PersonMatch): Promise<ErasedEvents> {
    if (!Number.isSafeInteger(teamId)) throw new AppError('invalid_input', 'Invalid project id.', 'team_id');
    return this.upkeep.erasePerson(teamId, match);
  }

  async deleteTeamEvents(teamId: number): Promise<void> {
    if (!Number.isSafeInteger(teamId)) throw new AppError('invalid_input', 'Invalid project id.', 'team_id');
    // Everything acknowledged must be loaded first, or it would outlive the deletion.
    await this.sync(teamId, DELETE_WAIT_MS);
    await this.upkeep.deleteTeam(teamId);
  }

  // ---- dead letters -------------------------------------------------------------------------

  listDeadLetters() {
    return listDeadLetters(this.s.dataDir);
  }

  async replayDeadLetters(ids?: readonly string[]): Promise<ReplayResult> {
    const out = await replayDeadLetters(this.s.dataDir, this.wal, ids, () => ++this.intakeSeq, () => {
      this.counters.deadLetters = Math.max(0, this.counters.deadLetters - 1);
    });
    if (out.replayed.length > 0) await this.flush();
    return out;
  }

  // ---- lifecycle ----------------------------------------------------------------------------

  stats(): EventStoreStats {
    const active = this.wal.activeSegment;
    const files = this.tiers.snapshot.files;
    this.pending.sweep(this.processor.processedSeq); // so pendingDistinctIds counts only ids still pending
    return {
      durability: this.s.durable ? 'durable' : 'relaxed',
      bufferedRows: this.unloaded().reduce((n, seg) => n + seg.rows, active?.rows ?? 0),
      pendingBytes: this.pendingBytes(),
      queuedBytes: this.wal.queuedBytes,
      walSegments: this.processor.waiting + this.loader.waiting + (active ? 1 : 0),
      logWrites: this.wal.writes,
      ...this.counters,
      hotRows: this.tiers.hotRows,
      parquetFiles: files.length,
      parquetRows: files.reduce((n, f) => n + f.rows, 0),
      parquetBytes: files.reduce((n, f) => n + f.bytes, 0),
      oldestPendingMs: this.oldestPendingMs(),
      backpressure: this.admission.refusal(0),
      appliedSegment: this.loader.done,
      compactedSegment: this.tiers.snapshot.compactedSegment,
      pendingDistinctIds: this.pending.size,
    };
  }

  private oldestPendingMs(): number {
    const active = this.wal.activeSegment;
    let oldest: number | null = null;
    for (const seg of this.unloaded()) if (seg.openedAt !== undefined && (oldest === null || seg.openedAt < oldest)) oldest = seg.openedAt;
    if (active && active.rows > 0 && active.openedAt !== undefined && (oldest === null || active.openedAt < oldest)) oldest = active.openedAt;
    return oldest === null ? 0 : Math.max(0, this.s.now() - oldest);
  }

  /** SIGTERM path: refuse new appends, load everything acknowledged, checkpoint. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.wal.close();
    await this.drain(true);
    await this.threads.release();
    await this.checkpoint();
  }
}
