import type { StoredEventRow } from '../../core/events/columns';
import type { Histogram } from '../../core/metrics/histogram';
import type { Row, SqlParam } from '../db';
import type { DeadLetter } from './log/dead-letters';
import type { ErasedEvents, PersonMatch } from './tiers/erasure';
import type { EventsRelation, StreamOptions, TimeRange } from './read/relation';
import type { SealedSegment, TimeSpan } from './log/segments';

/** What an intake frame records besides the body: everything processing needs, fixed at receipt. */
export interface IntakeContext {
  teamId: number;
  /** Receive time (epoch ms): the default timestamp, the clock-skew reference, `created_at`. */
  receivedAt: number;
  ip: string | null;
  anonymizeIps: boolean;
  /** The request's send time (epoch ms), for clock-skew correction. */
  sentAt: number | null;
  /** Posted to /engage (nameless events are `$identify`). */
  engage: boolean;
  /**
   * The seed of the ids its events without a client uuid get (`seededUuids`), so processing it
   * again names them the same; absent in frames logged before it was kept (random ids then).
   */
  uuidSeed?: string;
}

/**
 * Where capture hands its requests (the capture module calls this, whatever the deployment): the
 * embedded server's event store (its own log, processed in the same process), or in cluster mode
 * the durable log that writers process (storage/log). Resolves once the request is as durable as
 * a 200 promises.
 */
export interface Intake {
  append(input: IntakeInput): Promise<void>;
}

/** One capture request for `appendIntake`. */
export interface IntakeInput {
  context: IntakeContext;
  /**
   * The decoded body, logged as it is: its exact UTF-8 bytes when the request carried them so
   * (logged without encoding the text again), else its JSON text.
   */
  body: Uint8Array | string;
  /** Events in it (as received; processing may drop some). */
  events: number;
  /**
   * The events already parsed, kept (memory allowing) so processing need not parse them again
   * (unless it prepares requests in runs elsewhere, `ProcessIntake.run`: then the body is kept);
   * null when another thread parsed them (then `prepared` holds their rows) or none is at hand
   * (then the body is read back from the log when processed).
   */
  parsed: unknown[] | null;
  /** Distinct ids the request names, for `awaitIntake`. */
  distinctIds: readonly string[];
  /**
   * Its rows being prepared elsewhere since receipt (another thread), handed to the intake
   * processor as they are: the store only carries it. Null: the processor starts from `parsed`
   * or the body.
   */
  prepared?: Promise<unknown> | null;
}

/**
 * A request's rows as the intake processor hands them back: encoded as log lines
 * (`encodeRowLines`, person ids filled in), with their uuids (for the retry filter) and their
 * event-time span. Their properties are JSON as `JSON.stringify` writes it of well-formed text
 * (no lone surrogates): the load takes them as they are, where rows logged as rows (`append`)
 * are checked as JSON. The store takes `lines` over: its buffer, when of a pooled size, is filled
 * again with other rows once written (`log/line-buffers.ts`), so it must be the rows' own.
 */
export interface EncodedRows {
  teamId: number;
  lines: Uint8Array;
  rows: number;
  uuids: readonly string[];
  span: TimeSpan | null;
  /** Events of the request not made into rows, by reason (absent: none). */
  dropped?: Readonly<Record<string, number>>;
  /**
   * The top-level keys of the rows' properties, by UTC day (days since the epoch) of their
   * timestamps: exactly the keys a row of that day has, as DuckDB's `json_keys` would list them.
   * Given, the Parquet files a load writes from these rows are registered with their keys and
   * need no pass over their rows to list them; absent, they are listed in the background.
   */
  propertyKeys?: ReadonlyArray<readonly [day: number, keys: readonly string[]]>;
}

/**
 * Turns one logged capture request into rows, in log order: given what the store kept of it
 * (the rows `prepared` at receipt, or its parsed `events`), else its body's `text` read back
 * from the log.
 */
export type ProcessIntake = ((context: IntakeContext, events: unknown[] | null, text: string | null, prepared?: unknown) => Promise<EncodedRows>) & {
  /**
   * Several logged requests of one project, in log order, turned into rows as one (their rows
   * joined in that order): given, the store keeps a small request's body rather than its parsed
   * events, and processes consecutive ones together (another thread prepares them, in one
   * message each way). `failed` names the requests whose body could not be read as events.
   */
  run?: (requests: readonly LoggedRequest[]) => Promise<{ rows: EncodedRows; failed: readonly RunFailure[] }>;
};

/** A logged capture request: its context and its decoded body (`IntakeInput.body`). */
export interface LoggedRequest {
  context: IntakeContext;
  body: Uint8Array | string;
}

/** A request of a run left out of its rows: its index in the run, and why. */
export interface RunFailure {
  index: number;
  error: string;
}

/**
 * An events table outside DuckDB that loads go to (ClickHouse: storage/clickhouse). Given a
 * batch's processed files (log-format row frames, oldest first) it stores their rows and returns
 * how many it was given. The same files given again (a retry after a failure whose outcome was
 * unknown, a replay after a crash before the watermark moved) must add nothing a read sees
 * twice: the event store's exactly-once rests on that, as it rests on DuckDB's transaction
 * without a sink.
 */
export interface EventSink {
  load(files: readonly string[], watermark: number): Promise<number>;
}

export type Durability = 'durable' | 'relaxed';

export interface EventStoreLogger {
  debug(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  error(message: string, meta?: Record<string, unknown>): void;
}

export interface EventStoreOptions {
  /** Root of the store's files: `<dataDir>/events/{wal,parquet,dead-letters}`. */
  dataDir: string;
  /**
   * `durable` (default): `append` resolves after the rows are fsynced (group commit): they
   * survive a process crash and a power loss. `relaxed`: resolves once written to the OS (the
   * log is fsynced every `relaxedSyncMs`): survives a process crash, may lose the last moments
   * on a power loss.
   */
  durability?: Durability;
  /** Extra wait before each group commit to gather more writers (default 0: natural batching). */
  groupCommitMs?: number;
  /** Rows per WAL segment: a full segment is loaded into DuckDB (default 200,000). */
  bufferMaxRows?: number;
  /** Age after which a non-empty segment is loaded anyway (default 1,000 ms). */
  bufferMaxAgeMs?: number;
  /** Bytes per WAL segment (default `loadMaxBytes`: a segment is loaded whole). */
  segmentMaxBytes?: number;
  /** Cap on acknowledged-but-not-loaded bytes plus queued bytes; beyond it, append rejects with 503 (default 2 GiB: on disk, so a burst of large batches is absorbed rather than refused). */
  maxPendingBytes?: number;
  /**
   * Cap on the same backlog in seconds of loading at the recent load speed (default 10): a
   * saturating load is refused (503) once its events would be queryable only later than this.
   * A few loads' worth is always taken (`Admission.backlogCap`).
   */
  maxBacklogSeconds?: number;
  /** Cap on bytes held in memory waiting for the log write (default 64 MiB). */
  maxQueuedBytes?: number;
  /** Below this much free disk space, append rejects with 503 (default 256 MiB). */
  minFreeDiskBytes?: number;
  /**
   * Threads of this process a saturating ingestion keeps busy besides DuckDB's: the request
   * thread and the ingest parser threads (default 2). While saturated, DuckDB keeps to the cores
   * they leave (see saturated-threads.ts).
   */
  busyThreads?: number;
  /** The machine's cores (default `os.availableParallelism()`). */
  cores?: number;
  relaxedSyncMs?: number;
  /**
   * Most bytes of processed segments loaded in one DuckDB transaction (default: an eighth of
   * DuckDB's memory cap, `loadMaxBytesFor`). A segment larger than this is loaded alone.
   */
  loadMaxBytes?: number;
  /** Attempts (fast path, then salvage) before a segment is moved to the dead letters (default 5). */
  maxFlushAttempts?: number;
  /** First retry delay after a failed load; doubles up to 10 s (default 200 ms). */
  flushRetryMs?: number;
  /**
   * Loads of at least this many rows go straight to Parquet instead of the hot table (default
   * 5,000). Storing as fast as acknowledging, loads under a steady stream are whatever came in
   * during the previous load, tens of thousands of rows: inserting them into the hot table and
   * compacting them later cost more than writing Parquet and merging the small files.
   */
  directMinRows?: number;
  /** Load-time dedupe also checks Parquet files of rows loaded this recently (default 60 s)... */
  dedupeWindowMs?: number;
  /** ...up to this many of their rows (default 2,000,000). */
  dedupeWindowRows?: number;
  /** Merge a team-day's small Parquet files once there are this many (default 8)... */
  mergeMinFiles?: number;
  /** ...each at least this old (default 60 s)... */
  mergeMinAgeMs?: number;
  /** ...and each smaller than this (default 1,000,000 rows). */
  mergeMaxFileRows?: number;
  /** Person-clustered copies of settled days, read by person lists (default true; see person-copies.ts)... */
  personCopies?: boolean;
  /** ...written once a day ended and its files are unchanged for this long (default 10 min). */
  personCopyMinAgeMs?: number;
  /** Compact once this many rows are hot (default 1,000,000)... */
  compactMinRows?: number;
  /** ...or once the oldest hot row is this old (default 10 min). */
  compactMaxAgeMs?: number;
  /** How long compacted rows stay in the hot table (relations built just before keep working). */
  purgeGraceMs?: number;
  /**
   * Run a DuckDB CHECKPOINT once its WAL exceeds this (default 32 MiB; looked at every 5 s).
   * Until then DuckDB holds the changes in memory too (persons, file lists, watermarks), in
   * proportion to the WAL, so a low threshold keeps that memory small (see bench/NOTES.md).
   */
  checkpointWalBytes?: number;
  /** Background compaction (default true). */
  autoCompact?: boolean;
  /**
   * How long a query waits for its project's acknowledged rows to be loaded (default 0.5 s): under
   * a backlog it then reads what is loaded, so it never waits minutes behind ingestion (nor behind
   * a log that cannot flush); when the loads ahead of them would take longer than this at the
   * recent speed, it does not wait at all.
   */
  visibilityTimeoutMs?: number;
  logger?: EventStoreLogger;
  /** The store's clock, epoch ms: ages, backoffs, grace periods, retention (default Date.now; see `Settings.now`). */
  now?: () => number;
  /**
   * Days of events each project keeps (projects absent keep everything), asked when retention
   * runs: at start, within a minute of `retentionChanged`, and hourly.
   */
  retention?: () => Promise<ReadonlyMap<number, number>>;
  /** Intake requests kept in memory for processing (parsed, or their body when another thread parsed them), at most, counted as logged bytes (parsed they take several times that; beyond: read and parsed again from the log). Default 64 MiB. */
  maxMemoBytes?: number;
  /** Distinct ids of unprocessed capture requests remembered one by one for flag checks' person waits; beyond, a check waits for everything logged (default 500,000). */
  maxPendingIds?: number;
  /** Uuids per generation of the recent-uuid filter (8 generations; see recent-uuids.ts). Default 1M. */
  dedupeFilterRows?: number;
  /** Turns each logged capture request into rows, in log order: the pipeline (`src/pipeline`). Without it, intake frames cannot be loaded. */
  intake?: ProcessIntake;
  /** Where loads go instead of DuckDB's hot table and Parquet files (an events table elsewhere: see `EventSink`). */
  sink?: EventSink;
  /** Test seams: run before every load attempt (throw to fail it, await to stall it). */
  hooks?: {
    beforeLoad?(segments: readonly SealedSegment[]): void | Promise<void>;
    /** Before each flush of the log (durable mode): await to stall the disk. */
    beforeLogSync?(): void | Promise<void>;
  };
}

export interface EventStoreStats {
  durability: Durability;
  /** Acknowledged rows not yet loaded into DuckDB (in the log). */
  bufferedRows: number;
  /** Bytes of the log not yet loaded, plus bytes queued in memory for the log. */
  pendingBytes: number;
  queuedBytes: number;
  walSegments: number;
  /** Group commits to the log (each one write, and in durable mode one flush). */
  logWrites: number;
  appendedRows: number;
  rejectedAppends: number;
  flushedRows: number;
  duplicateRowsSkipped: number;
  /** Loads whose uuids were certainly new, which skipped reading the recent uuids (recent-uuids.ts). */
  freshLoads: number;
  /** Parquet files whose uuids loads read to drop client retries (see `PriorRows`). */
  priorFilesRead: number;
  /**
   * Sealed segments whose log file processing read back: a frame without a memo (recovery, the
   * memory budget, row frames), frames written but never acknowledged (a failed sync), or a
   * failed frame's bytes for the dead letters.
   */
  segmentsReadBack: number;
  flushes: number;
  flushFailures: number;
  lastFlushError: string | null;
  hotRows: number;
  parquetFiles: number;
  parquetRows: number;
  compactions: number;
  merges: number;
  /** Person-clustered copies written (person-copies.ts). */
  personCopies: number;
  /** Parquet files and hot rows dropped by retention since start. */
  expiredFiles: number;
  expiredHotRows: number;
  checkpoints: number;
  deadLetters: number;
  appliedSegment: number;
  compactedSegment: number;
  /** Distinct ids of unprocessed capture requests remembered for flag checks' person waits. */
  pendingDistinctIds: number;
  /** Age of the oldest acknowledged event not yet loaded (ms since its log segment was opened; 0: none). */
  oldestPendingMs: number;
  parquetBytes: number;
  /** Why appends are refused right now (503), or null while they are accepted. */
  backpressure: 'disk_low' | 'backlog' | 'log_queue' | 'closed' | null;
  droppedEvents: Readonly<Record<string, number>>;
  /** Seconds each kind of storage work took: `load` (logged events into the store), and the background's. */
  workSeconds: Readonly<Record<'load' | 'compaction' | 'merge' | 'person_copy', Histogram>>;
}

export interface RelationOptions {
  /**
   * The statement filters on one person's distinct ids: read person-clustered copies where they
   * cover the range (the relation's `sql` only; the same rows either way).
   */
  byPerson?: boolean;
  /**
   * The statement keeps only rows of these distinct ids (it says so in its own condition too): an
   * engine may read just their rows (ClickHouse's person-ordered copy). Without it, all of them.
   */
  distinctIds?: readonly string[];
  /**
   * The caller keeps one row per uuid (a page's rows by key) or per sort key (a page's keys): the
   * relation may give a retried insert's copies of a row (ClickHouse then reads without FINAL).
   */
  onePerUuid?: boolean;
  /**
   * Wait first for the team's just-acknowledged events (`awaitVisible`); default true. A request
   * that already waited passes false for its later statements: one request waits once, not once
   * per statement (under a sustained load every statement would find new events to wait for).
   */
  wait?: boolean;
}

export interface ReplayResult {
  replayed: string[];
  rows: number;
}

/**
 * The event store: everything the rest of the service knows about where events live. A
 * distributed engine can implement the same interface later; nothing outside `src/storage/`
 * sees DuckDB.
 */
export interface EventStore {
  /**
   * Log rows already made (tests, seeding a bench) on the same path as capture requests, minus
   * the pipeline. Resolves once as durable as configured; rejects with AppError 'unavailable'
   * (503 + retryAfter) when full.
   */
  append(rows: readonly StoredEventRow[]): Promise<void>;
  /** Log a capture request; resolves once durable (its events are processed behind it). */
  appendIntake(input: IntakeInput): Promise<void>;
  /** Whether a logged capture request of the project naming one of these distinct ids is not processed yet (no wait). */
  intakePending(teamId: number, distinctIds: readonly string[]): boolean;
  /** Wait until pending capture requests of the project (null: any) naming these distinct ids (null: any) are processed (bounded). */
  awaitIntake(teamId: number | null, distinctIds: readonly string[] | null, timeoutMs?: number): Promise<void>;
  /** Load everything acknowledged so far into DuckDB. */
  flush(): Promise<void>;
  /** Flush, move every hot row into Parquet, merge each team-day's files into one (and purge what the grace period allows). */
  compact(): Promise<void>;
  checkpoint(): Promise<void>;
  /**
   * Wait until the team's acknowledged events are loaded, at most `visibilityTimeoutMs`: under a
   * backlog a query reads what is loaded rather than wait for it (at once, when the loads ahead
   * would not be done within that bound at the recent speed).
   */
  awaitVisible(teamId: number): Promise<void>;
  /** One team's events (acknowledged rows are loaded first, see `awaitVisible`) as `FROM <sql> AS events`, exposing EVENT_COLUMNS. */
  eventsRelation(teamId: number, range?: TimeRange, options?: RelationOptions): Promise<EventsRelation>;
  /** Write every person-clustered copy due now, without waiting for the days to settle (the background does it later otherwise). Returns how many. */
  buildPersonCopies(): Promise<number>;
  /**
   * The same rows as `FROM <sql> AS events` whose own order is newest first, so a statement that
   * keeps DuckDB's insertion order (a scan with WHERE and SELECT, no join or aggregate) needs no
   * sort; null when storage cannot give that: files overlapping in time, or hot rows in the range.
   */
  newestFirstRelation(teamId: number, range: TimeRange, options?: Pick<RelationOptions, 'wait'>): Promise<string | null>;
  /** Run a read query and stream its rows in chunks (for exports); aborting `signal` interrupts it. */
  streamQuery(sql: string, params?: readonly SqlParam[], options?: StreamOptions): AsyncIterableIterator<Row[]>;
  deleteTeamEvents(teamId: number): Promise<void>;
  /**
   * Wait until every capture request of the project acknowledged so far is processed and its
   * events loaded (at most `timeoutMs`, default 60 s); throws AppError 'unavailable' (503 +
   * retryAfter) when the log has not got that far by then.
   */
  awaitLoaded(teamId: number, timeoutMs?: number): Promise<void>;
  /**
   * Remove every loaded event of a person (by distinct id or person id) from the hot table, the
   * Parquet files and the person-clustered copies, all at once for readers (see erasure.ts).
   * Events still in the log are not touched: `awaitLoaded` first.
   */
  erasePersonEvents(teamId: number, match: PersonMatch): Promise<ErasedEvents>;
  /** Run `fn` while no event file is deleted (merges, retention, purges wait): a backup copies them meanwhile. */
  holdFiles<T>(fn: () => Promise<T>): Promise<T>;
  /** A project's retention changed: apply retention soon (within a minute), not only at the next hourly run. */
  retentionChanged(): void;
  listDeadLetters(): Promise<DeadLetter[]>;
  /** Feed dead letters (all, or the given ids) back through the write path. */
  replayDeadLetters(ids?: readonly string[]): Promise<ReplayResult>;
  stats(): EventStoreStats;
  /** Flush, checkpoint and stop background work. The Database stays open (its owner closes it). */
  close(): Promise<void>;
}
