/**
 * The event store: a group-committed write-ahead log in front of a DuckDB hot table, compacted
 * into Parquet. Its folders follow an event: `log/` (the group commit, the 200; recovery; dead
 * letters) → `process/` (capture requests into rows, through the pipeline) → `load/` (rows into
 * DuckDB, exactly once) → `tiers/` (the hot table and the Parquet files, and their upkeep) →
 * `read/` (one relation over both, and the events API's statements). `store.ts` wires them:
 * see it for the life of an event, and `types.ts` for the contract.
 */
export { createEventStore } from './store';
export type { EventSink, EventStore, EventStoreOptions, EventStoreStats, EventStoreLogger, Durability, Intake, IntakeContext, IntakeInput, EncodedRows, LoggedRequest, ProcessIntake, RunFailure, RelationOptions, ReplayResult } from './types';
export type { EventsRelation, StreamOptions, TimeRange } from './read/relation';
export { streamQuery } from './read/relation';
export { listDeadLetters, type DeadLetter } from './log/dead-letters';
export type { ErasedEvents, PersonMatch } from './tiers/erasure';
export { eventMigrations } from './tiers/schema';

import type { EventStore, ReplayResult } from './types';

/** Operator CLI: feed dead letters back through an open store (`dlq replay [ids...]`). */
export function replayDeadLetters(store: EventStore, ids?: readonly string[]): Promise<ReplayResult> {
  return store.replayDeadLetters(ids);
}
