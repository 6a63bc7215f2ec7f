import { availableParallelism } from 'node:os';
import { newHistogram } from '../../core/metrics/histogram';
import { threadsLeft } from './tiers/saturated-threads';
import type { MergePolicy } from './tiers/compaction';
import type { PersonCopyPolicy } from './tiers/person-copies';
import type { EventSink, EventStoreLogger, EventStoreOptions, ProcessIntake } from './types';

export const MiB = 1024 * 1024;

/**
 * The share of DuckDB's memory cap one load may take. A load sorts its rows by time before
 * writing them (`flush.ts`), and the sort holds about as many bytes as the processed rows: as a
 * backlog built, loads of a few hundred MB filled the cap beside merges, the footers queries
 * kept then (DuckDB's footer cache is off now) and the CSV reader's buffers, and failed out of
 * memory (see bench/NOTES.md).
 */
const LOAD_SHARE_OF_CAP = 1 / 8;

/** The most bytes one load takes under a DuckDB cap of `capBytes` (NaN: unknown, DuckDB's default cap assumed). */
export function loadMaxBytesFor(capBytes: number): number {
  const cap = Number.isFinite(capBytes) && capBytes > 0 ? capBytes : 512e6;
  return Math.max(8 * MiB, Math.floor(cap * LOAD_SHARE_OF_CAP));
}

/** Every option resolved to its value (defaults documented on `EventStoreOptions`). */
export interface Settings {
  dataDir: string;
  durable: boolean;
  groupCommitMs: number;
  segmentMaxRows: number;
  segmentMaxBytes: number;
  segmentMaxAgeMs: number;
  relaxedSyncMs: number;
  maxPendingBytes: number;
  maxBacklogSeconds: number;
  maxQueuedBytes: number;
  minFreeDiskBytes: number;
  /** DuckDB's threads while ingestion saturates the store (`SaturatedThreads`). */
  saturatedThreads: number;
  loadMaxBytes: number;
  maxFlushAttempts: number;
  flushRetryMs: number;
  compactMinRows: number;
  compactMaxAgeMs: number;
  purgeGraceMs: number;
  checkpointWalBytes: number;
  autoCompact: boolean;
  visibilityTimeoutMs: number;
  maxMemoBytes: number;
  maxPendingIds: number;
  dedupeFilterRows: number;
  directMinRows: number;
  dedupeWindowMs: number;
  dedupeWindowRows: number;
  merge: MergePolicy;
  personCopies: PersonCopyPolicy;
  log: EventStoreLogger;
  /**
   * The store's clock (epoch ms), read by every decision that depends on the time of day or on
   * an age: segment age, load retry backoff, file and person-copy ages (merges, the dedupe window,
   * settled days), purge grace, retention, the pacing of indexing and of disk and DuckDB-WAL checks,
   * the backlog's age.
   * Tests pass a manual clock and advance it instead of sleeping. `performance.now()` stays where
   * only real work is measured: timings for metrics and logs, the load speed behind Retry-After
   * and behind whether a query can wait for its events (with how long the running load has run),
   * the slices after which processing yields to requests, the 100 ms arrival windows that detect
   * saturation (a rate of real requests; a frozen clock would keep one window open forever), and
   * the time left of a wait bounded by a real timer (timeouts are setTimeout, not this clock).
   * File names keep Date.now(): they must stay unique across restarts whatever this clock says.
   */
  now: () => number;
  /** Days of events each project keeps (null: no project has a limit). */
  retention: EventStoreOptions['retention'] | null;
  hooks: NonNullable<EventStoreOptions['hooks']>;
  intake: ProcessIntake | null;
  sink: EventSink | null;
}

const silentLogger: EventStoreLogger = { debug() {}, info() {}, warn() {}, error() {} };

export function resolveSettings(o: EventStoreOptions): Settings {
  const loadMaxBytes = o.loadMaxBytes ?? loadMaxBytesFor(Number.NaN);
  return {
    dataDir: o.dataDir,
    durable: (o.durability ?? 'durable') === 'durable',
    groupCommitMs: o.groupCommitMs ?? 0,
    segmentMaxRows: o.bufferMaxRows ?? 200_000,
    // A segment is loaded whole: one larger than a load (a burst sealed by age) would be a larger sort.
    segmentMaxBytes: o.segmentMaxBytes ?? loadMaxBytes,
    segmentMaxAgeMs: o.bufferMaxAgeMs ?? 1000,
    relaxedSyncMs: o.relaxedSyncMs ?? 1000,
    maxPendingBytes: o.maxPendingBytes ?? 2048 * MiB,
    maxBacklogSeconds: o.maxBacklogSeconds ?? 10,
    maxQueuedBytes: o.maxQueuedBytes ?? 64 * MiB,
    minFreeDiskBytes: o.minFreeDiskBytes ?? 256 * MiB,
    saturatedThreads: threadsLeft(o.cores ?? availableParallelism(), o.busyThreads ?? 2),
    loadMaxBytes,
    maxFlushAttempts: o.maxFlushAttempts ?? 5,
    flushRetryMs: o.flushRetryMs ?? 200,
    compactMinRows: o.compactMinRows ?? 1_000_000,
    compactMaxAgeMs: o.compactMaxAgeMs ?? 10 * 60_000,
    purgeGraceMs: o.purgeGraceMs ?? 30_000,
    checkpointWalBytes: o.checkpointWalBytes ?? 32 * MiB,
    autoCompact: o.autoCompact ?? true,
    visibilityTimeoutMs: o.visibilityTimeoutMs ?? 500,
    maxMemoBytes: o.maxMemoBytes ?? 64 * MiB,
    maxPendingIds: o.maxPendingIds ?? 500_000,
    dedupeFilterRows: o.dedupeFilterRows ?? 1_000_000,
    directMinRows: o.directMinRows ?? 5_000,
    dedupeWindowMs: o.dedupeWindowMs ?? 60_000,
    dedupeWindowRows: o.dedupeWindowRows ?? 2_000_000,
    merge: {
      minFiles: o.mergeMinFiles ?? 8,
      minAgeMs: o.mergeMinAgeMs ?? 60_000,
      maxFileRows: o.mergeMaxFileRows ?? 1_000_000,
    },
    personCopies: { enabled: o.personCopies ?? true, minAgeMs: o.personCopyMinAgeMs ?? 10 * 60_000 },
    log: o.logger ?? silentLogger,
    now: o.now ?? Date.now,
    retention: o.retention ?? null,
    hooks: o.hooks ?? {},
    intake: o.intake ?? null,
    sink: o.sink ?? null,
  };
}

/** Counters reported by `stats()`, shared by the parts of the store. */
export function newCounters() {
  return {
    appendedRows: 0,
    rejectedAppends: 0,
    flushedRows: 0,
    duplicateRowsSkipped: 0,
    freshLoads: 0,
    priorFilesRead: 0,
    segmentsReadBack: 0,
    flushes: 0,
    flushFailures: 0,
    lastFlushError: null as string | null,
    compactions: 0,
    merges: 0,
    personCopies: 0,
    /** Parquet files and hot rows dropped by retention. */
    expiredFiles: 0,
    expiredHotRows: 0,
    checkpoints: 0,
    deadLetters: 0,
    /** Events the intake processor dropped, by its reason (no name, no distinct id, ...). */
    droppedEvents: {} as Record<string, number>,
    /** Seconds each kind of storage work took (loads into the store, and the background's). */
    workSeconds: { load: newHistogram(), compaction: newHistogram(), merge: newHistogram(), person_copy: newHistogram() },
  };
}
export type Counters = ReturnType<typeof newCounters>;

/** A failed attempt to process or load a segment (retried; `/metrics` and stats show the last error). */
export function countFailure(counters: Counters, error: unknown): void {
  counters.flushFailures++;
  counters.lastFlushError = String(error);
}
