/**
 * The event store: a group-committed write-ahead log in front of a DuckDB hot table, compacted
 * into Parquet. See `store.ts` for the life of an event and `types.ts` for the contract.
 */
export { createEventStore } from './store';
export type { EventSink, EventStore, EventStoreOptions, EventStoreStats, EventStoreLogger, Durability, Intake, IntakeInput, EncodedRows, ProcessIntake, RelationOptions, ReplayResult } from './types';
export type { EventsRelation, StreamOptions, TimeRange } from './relation';
export { streamQuery } from './relation';
export { listDeadLetters, type DeadLetter } from './dead-letters';
export type { ErasedEvents, PersonMatch } from './erasure';
export { eventMigrations } from './schema';

import type { EventStore, ReplayResult } from './types';

/** Operator CLI: feed dead letters back through an open store (`dlq replay [ids...]`). */
export function replayDeadLetters(store: EventStore, ids?: readonly string[]): Promise<ReplayResult> {
  return store.replayDeadLetters(ids);
}
