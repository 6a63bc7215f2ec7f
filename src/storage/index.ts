import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { memoryUsage, openDatabase, type Database, type MemoryUsage } from './db';
import { migrate } from './migrations';
import type { ManagementStore, Project, ProjectSettings } from './management/types';
import { retentionDays } from '../core/projects/retention';
import type { DefinitionsStore } from './definitions/definitions-store';
import type { PersonStore } from './persons/types';
import { openMetaStores, type MetaStores } from './meta';
import { createProjectCache } from './project-cache';
import { createSeenTracker, type SeenTracker } from './seen/seen-tracker';
import type { FlagStore } from './flags/types';
import type { InviteStore } from './invites/types';
import type { CohortStore } from './cohorts/types';
import type { EventsSourceRef } from './definitions/events-source';
import { createEventStore, listDeadLetters, replayDeadLetters, type EventStore, type Durability, type Intake, type ProcessIntake } from './events';
import { createLogIntake, openEventLog } from './log/log-intake';
import type { RedisLog } from './log/redis-streams';
import type { Logger } from '../logger';
import { writeBackup, type BackupSummary } from './backup';
import { createPersonErasure, type PersonErasure } from './erasure';
import type { CompiledStatement } from '../core/query';
import type { Row } from './db';
import type { QueryRunner } from './events/read/runner';
import { statementRows } from './events/read/statements';
import { duckdbEventReads, type EventReads, type ReadFeature } from './events/read/reads';
import type { ClickHouse } from './clickhouse/client';
import { openClickHouseEventReads } from './clickhouse/event-reads';
import { clickhouseBehavioralCounts } from './clickhouse/behavioral-counts';
import { clickhouseEventVolumes } from './clickhouse/event-volumes';
import { clickhouseSink, deleteTeamEvents as deleteClickHouseTeamEvents } from './clickhouse/events-table';
import { openClickHouse, parseClickHouseUrl } from './clickhouse/client';
import { eventsSharded, migrateClickHouse } from './clickhouse/schema';
import { redactUrl } from './postgres/client';
import { deletePersonEvents } from './clickhouse/person-erasure';
import { clickhousePersonMirror } from './clickhouse/persons-table';

export { DatabaseLockedError } from './db';
export { NewerDatabaseError } from './migrations';
export { MetaStoreUnreachableError } from './postgres';
export { EventLogUnreachableError } from './log/log-intake';
export { LogNotDurableError } from './log/redis-streams';
export { BackupError, restoreBackup, type BackupSummary } from './backup';
export type { PersonErasure } from './erasure';
export type { ErasedEvents } from './events';
export * from './management/types';
export type { DefinitionsStore } from './definitions/definitions-store';
export type { EventStore, EventStoreStats, Intake, IntakeInput, ReplayResult } from './events';
export type { DeadLetter } from './events/log/dead-letters';
export { listDeadLetters, replayDeadLetters };
export type * from './persons/types';
export { eventsWithPersons, personsRelation } from './persons/relations';
export type { EventReads } from './events/read/reads';
export type { SeenTracker } from './seen/seen-tracker';
export type * from './flags/types';
export type * from './invites/types';
export type * from './cohorts/types';
export type { EventsSource, EventsSourceRef, EventsSourceRelation } from './definitions/events-source';
export type { EventDefinition, EventDefinitionPatch, EventDefinitionQuery } from './definitions/definitions-store';
export type { PropertyDefinition, PropertyDefinitionPatch, PropertyDefinitionQuery, PropertyKind } from './definitions/definitions-store';

/** Everything the service keeps, behind engine-neutral interfaces. */
export interface Storage {
  management: ManagementStore;
  definitions: DefinitionsStore;
  /** Persons and groups, in memory per project, written in bulk. */
  persons: PersonStore;
  /** Event names, property keys and `ingested_event`, as ingestion sees them. */
  seen: SeenTracker;
  /** Feature flags per project, cached in memory; continuity hash keys. */
  flags: FlagStore;
  /** Organization invites. */
  invites: InviteStore;
  /** Cohorts, their members and their background calculation. */
  cohorts: CohortStore;
  /** Where cohorts and event definitions read events from; the event store sets `current`. */
  eventsSource: EventsSourceRef;
  /** Where capture requests go: `events` (embedded), or the cluster's log (`eventLog`). */
  intake: Intake;
  /** Events: the durable write path (group-committed log → DuckDB → Parquet) and one relation to read. */
  events: EventStore;
  /**
   * Where the events API reads events (its QueryRunner's engine): the event store above, or the
   * ClickHouse database given as `eventReads`. Statements for it are compiled for its `dialect`.
   */
  eventReads: EventReads;
  /**
   * A compiled HogQL statement over a project's events or persons (compiled for the runner's
   * dialect), run under the request's runner: `limit` rows at most (see statements.ts).
   */
  statementRows(teamId: number, compiled: CompiledStatement, page: { limit: number; offset: number }, runner: QueryRunner): Promise<Row[]>;
  /** A project by its API token (cached; invalidated by every project change made here). */
  projectByToken(token: string): Promise<Project | null>;
  /** Change a project's name or settings; a change of its retention applies within a minute, not at the next hourly run. */
  updateProject(projectId: number, patch: { name?: string; settings?: Partial<ProjectSettings> }): Promise<Project>;
  /**
   * Delete a person and their distinct ids, cohort memberships and flag hash keys; with
   * `deleteEvents`, also every event of theirs from every tier (the GDPR right to erasure; see
   * erasure.ts). Waits first for the project's acknowledged events (503 when the log is too far
   * behind). Null when the project has no such person.
   */
  deletePerson(teamId: number, personUuid: string, options: { deleteEvents: boolean }): Promise<PersonErasure | null>;
  /** Delete a project and every row that belongs to it. */
  deleteProject(projectId: number): Promise<void>;
  /**
   * Write a consistent copy of everything into `dir` (new or empty) while ingestion goes on:
   * every event acknowledged before the call, persons, flags, keys, definitions, cohorts.
   */
  backup(dir: string): Promise<BackupSummary>;
  /** Memory the store holds now, what it spilled to disk, and its cap (bytes). */
  memoryUsage(): Promise<MemoryUsage>;
  /**
   * Where exports write their temporary files: `DATA_DIR/exports`, on the data's disk rather than
   * in /tmp, which is often memory-backed (a large export would be held in memory). Emptied when
   * the storage opens (the database locked first): a process killed mid-export leaves its files.
   */
  exportsDir: string;
  close(): Promise<void>;
}

export interface StorageOptions {
  dataDir: string;
  /**
   * `postgres://USER@HOST:PORT/DATABASE` (META_STORE): the management data (organizations,
   * users, keys, projects, invites, flags, cohorts, definitions, persons) is kept there, shared
   * by every server process that names it; absent: in the DuckDB database in `dataDir`.
   */
  metaStore?: string;
  /**
   * `redis://HOST:PORT` (EVENT_LOG, a cluster node): capture requests go to that log, for the
   * cluster's writers, instead of `events`; absent: to the event store in `dataDir`.
   */
  eventLog?: string;
  /** DuckDB's memory cap (default 1GB, as the config's); over it, work spills to `<dataDir>/tmp`. */
  memoryLimit?: string;
  durability?: Durability;
  logger?: Logger;
  /** Person-clustered copies of settled days (default true; see storage/events/tiers/person-copies.ts). */
  personCopies?: boolean;
  /**
   * Turns logged capture requests into rows (normalization, persons, definitions): the pipeline
   * (`src/pipeline`, `withPipeline`). Without it, logged capture requests cannot be stored.
   */
  intake?: (stores: { persons: PersonStore; seen: SeenTracker }) => ProcessIntake;
  /** Days of events a project keeps unless its own `events_retention_days` says otherwise (absent: forever). */
  defaultRetentionDays?: number;
  /** Epoch ms now: the event store's clock (ages, backoffs, grace periods, retention; tests move it; default Date.now). */
  now?: () => number;
  /**
   * Read the events API's events from this ClickHouse database (its `events` table, migrated
   * by its owner, who also closes it) instead of the embedded store. Writes still go to the
   * embedded store; whoever fills the table (the cluster writer, tests) is another matter. The
   * persons this process changes are copied there (persons-table.ts), for the reads' joins.
   */
  eventReads?: ClickHouse;
  /**
   * Keep the events in this ClickHouse database (migrated by its owner, who also closes it): the
   * embedded store logs and processes as ever, and loads into its `events` table (`EventSink`)
   * instead of DuckDB's hot table and Parquet files; the events API reads it (as `eventReads`,
   * waiting for a project's just-acknowledged events as the embedded store does).
   */
  eventsStore?: ClickHouse;
  /**
   * EVENTS_STORE: a `clickhouse://` URL opened (and migrated) with the storage and closed with
   * it: `eventsStore` for an embedded server, `eventReads` for a node (with `eventLog`).
   */
  eventsStoreUrl?: string;
  /**
   * A ClickHouse database (migrated and closed by its owner) that the persons are copied into at
   * every flush, beside events others load there (the cluster's writer). `eventsStore` and
   * `eventReads` get the copy without it: their event reads join it.
   */
  personsMirror?: ClickHouse;
  /** Event-store tuning (tests pass small buffers). */
  eventStore?: Partial<Parameters<typeof createEventStore>[1]>;
}

/**
 * Where the events API reads events: the ClickHouse database holding them, or the embedded store.
 * A person's events are deleted there only by an embedded server over one (unsharded) table:
 * a node cannot wait for what the cluster's writers have not inserted yet (a mutation would
 * leave those rows, and a 202 would promise more than was done), and the Distributed table takes
 * no mutation (each shard's would be needed).
 */
function eventReadsOf(options: StorageOptions, store: EventStore, erasesEvents: boolean): EventReads {
  if (options.eventsStore) {
    const answers: ReadFeature[] = erasesEvents ? ['event_erasure'] : [];
    return openClickHouseEventReads(options.eventsStore, { awaitVisible: (teamId) => store.awaitVisible(teamId), answers });
  }
  return options.eventReads ? openClickHouseEventReads(options.eventReads) : duckdbEventReads(store);
}

/** Persons and seen definitions are written at least this often, besides before every event load. */
const BACKGROUND_FLUSH_MS = 1_000;

export const DATABASE_FILE = 'analytics.duckdb';

/**
 * DuckDB's cap when none is given: half of a 1 GB process. Under a sustained load the rest (the
 * main and parser threads' heaps, buffers outside DuckDB, the allocators' spare memory) held
 * 0.5–0.7 GB beside DuckDB's share (see bench/NOTES.md).
 */
export const DEFAULT_MEMORY_LIMIT = '512MB';

export async function openStorage(options: StorageOptions): Promise<Storage> {
  // First: a log that cannot keep the 200's promise stops the start before anything is made.
  const log: RedisLog | null = options.eventLog ? await openEventLog(options.eventLog) : null;
  let events: ClickHouse | null = null;
  try {
    if (options.eventsStoreUrl) events = await openEventsDatabase(options.eventsStoreUrl);
    // A node only reads the events (the writers load them); an embedded server loads its own.
    const withEvents = events ? (log ? { ...options, eventReads: events } : { ...options, eventsStore: events }) : options;
    const storage = await openStores(withEvents, log);
    const close = storage.close;
    return Object.assign(storage, {
      async close() {
        await close();
        await events?.close();
      },
    });
  } catch (error) {
    log?.close();
    await events?.close();
    throw error;
  }
}

/** The events database named by EVENTS_STORE, its tables made or brought up to date. */
async function openEventsDatabase(url: string): Promise<ClickHouse> {
  let ch: ClickHouse | null = null;
  try {
    ch = await openClickHouse(parseClickHouseUrl(url));
    await migrateClickHouse(ch);
    return ch;
  } catch (error) {
    await ch?.close();
    throw new EventsStoreUnreachableError(url, error);
  }
}

/** Raised at start when the events database (EVENTS_STORE) cannot be reached or set up. */
export class EventsStoreUnreachableError extends Error {
  constructor(url: string, cause: unknown) {
    super(`The events database ${redactUrl(url)} (EVENTS_STORE) cannot be reached: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'EventsStoreUnreachableError';
  }
}

async function openStores(options: StorageOptions, log: RedisLog | null): Promise<Storage> {
  const erasesElsewhere = options.eventsStore ? !(await eventsSharded(options.eventsStore)) : false;
  await mkdir(options.dataDir, { recursive: true });
  const db: Database = await openDatabase(join(options.dataDir, DATABASE_FILE), {
    memoryLimit: options.memoryLimit ?? DEFAULT_MEMORY_LIMIT,
    tempDirectory: join(options.dataDir, 'tmp'),
  });
  const eventsSource: EventsSourceRef = {};
  const exportsDir = join(options.dataDir, 'exports');
  let meta: MetaStores;
  try {
    await rm(exportsDir, { recursive: true, force: true });
    await mkdir(exportsDir);
    await migrate(db);
    const mirrorTo = options.eventsStore ?? options.eventReads ?? options.personsMirror;
    meta = await openMetaStores(db, eventsSource, { ...options, personMirror: mirrorTo && clickhousePersonMirror(mirrorTo) });
  } catch (error) {
    await db.close();
    throw error;
  }
  const { cache, management } = createProjectCache(meta.management);
  meta.onManagementChange(() => cache.invalidate());
  const { definitions, persons, flags, invites, cohorts } = meta;
  const seen = createSeenTracker(meta.seenRows, management);
  let store: EventStore;
  try {
    store = await createEventStore(db, {
      dataDir: options.dataDir,
      durability: options.durability ?? 'durable',
      logger: options.logger,
      personCopies: options.personCopies ?? true,
      now: options.now,
      retention: () => retentionPolicy(management, options.defaultRetentionDays),
      ...options.eventStore,
      ...(options.eventsStore ? { sink: clickhouseSink(options.eventsStore) } : {}),
      intake: options.intake?.({ persons, seen }),
      hooks: {
        // Persons first: every stored event's person changes are stored before the event is.
        async beforeLoad(segments) {
          await persons.flush();
          await options.eventStore?.hooks?.beforeLoad?.(segments);
        },
      },
    });
  } catch (error) {
    await meta.close();
    await db.close();
    throw error;
  }
  const eventsElsewhere = erasesElsewhere && options.eventsStore ? { erasePersonEvents: deletePersonEvents.bind(null, options.eventsStore) } : undefined;
  const erasure = createPersonErasure(db, { persons, cohorts, flags, events: store, eventsElsewhere }, () => new Date(options.now?.() ?? Date.now()), options.logger);
  // An erasure cut short by a stop or crash is finished before anything is served.
  await erasure.resume().catch((error) => options.logger?.error('person erasure could not be finished; it is retried at the next start', { error: String(error) }));
  // Cohort calculations and definitions' volumes run in DuckDB over its own events. With the
  // events in ClickHouse, volumes are counted there, and so is a behavioural cohort condition,
  // per distinct id (the calculation resolves persons and the rest here).
  const eventReads = eventReadsOf(options, store, erasesElsewhere);
  const eventsIn = options.eventsStore ?? options.eventReads;
  if (eventsIn) {
    eventsSource.behavioralCounts = clickhouseBehavioralCounts(eventsIn, eventReads);
    eventsSource.eventVolumes = clickhouseEventVolumes(eventsIn, eventReads);
  } else eventsSource.current = (teamId) => store.eventsRelation(teamId);
  eventsSource.syncPersons = async (teamId) => {
    if (teamId !== undefined && meta.personsElsewhere) await persons.ensureLoaded(teamId);
    await store.awaitIntake(null, null);
    await persons.flush();
  };
  // A copy that cannot be brought up to date now is at the next change or lost connection.
  await meta.start().catch((error) => options.logger?.warn('cohort copies could not be brought up to date', { error: String(error) }));
  const background = setInterval(() => {
    persons.flush().catch((error) => options.logger?.warn('person flush failed; will retry', { error }));
    seen.flush().catch((error) => options.logger?.warn('definitions flush failed; will retry', { error }));
  }, BACKGROUND_FLUSH_MS);
  background.unref();
  return {
    management,
    definitions,
    persons,
    seen,
    flags,
    invites,
    cohorts,
    eventsSource,
    events: store,
    intake: log ? createLogIntake(log) : { append: (input) => store.appendIntake(input) },
    eventReads,
    statementRows: (teamId, compiled, page, runner) => statementRows({ events: store, persons }, runner, teamId, compiled, page),
    projectByToken: (token) => cache.byToken(token),
    memoryUsage: () => memoryUsage(db),
    exportsDir,
    async backup(dir) {
      // Everything acknowledged so far into the tables (persons first, as every load does).
      await store.flush();
      await persons.flush();
      await seen.flush();
      return store.holdFiles(() => writeBackup(db, options.dataDir, DATABASE_FILE, dir));
    },
    async updateProject(projectId, patch) {
      const project = await management.updateProject(projectId, patch);
      if (patch.settings && 'events_retention_days' in patch.settings) store.retentionChanged();
      return project;
    },
    deletePerson: (teamId, personUuid, { deleteEvents }) => erasure.erase(teamId, personUuid, deleteEvents),
    async deleteProject(projectId) {
      await management.deleteProject(projectId);
      await definitions.deleteTeam(projectId);
      await persons.deleteTeam(projectId);
      seen.forgetTeam(projectId);
      await flags.deleteTeam(projectId);
      await cohorts.deleteTeam(projectId);
      await store.deleteTeamEvents(projectId);
      const elsewhere = options.eventsStore ?? options.eventReads;
      if (elsewhere) await deleteClickHouseTeamEvents(elsewhere, projectId);
    },
    async close() {
      clearInterval(background);
      await store.close();
      await persons.flush();
      await seen.flush();
      await cohorts.whenIdle();
      await db.close();
      await meta.close();
      log?.close();
    },
  };
}

/** Days each project keeps; a project that keeps everything is absent. */
async function retentionPolicy(management: ManagementStore, defaultDays: number | undefined): Promise<Map<number, number>> {
  const policy = new Map<number, number>();
  for (const p of await management.listAllProjects()) {
    const days = retentionDays(p.settings.events_retention_days, defaultDays);
    if (days !== null) policy.set(p.id, days);
  }
  return policy;
}
