import type { BehavioralLeaf } from '../../core/cohorts/types';

/**
 * Where cohort calculations and event-definition volumes read events from. The event store
 * provides it by setting `current`; until it does, behavioural cohorts fail their calculation
 * (counted in `errors_calculating`) and `volume_30_day` is null. With the events in another
 * engine, `behavioralCounts` and `eventVolumes` are set instead.
 */
export interface EventsSourceRelation {
  /** A parenthesized relation, e.g. `(SELECT ... FROM events_hot UNION ALL ...)`. */
  sql: string;
  params: unknown[];
}

/**
 * The events of one project as a relation with the columns team_id (INTEGER), event (VARCHAR),
 * distinct_id (VARCHAR), timestamp (TIMESTAMP, UTC) and properties (JSON).
 */
export type EventsSource = (teamId: number) => Promise<EventsSourceRelation>;

/** How many of a behavioural cohort condition's events each distinct id has (those with none absent). */
export type BehavioralCounts = (teamId: number, leaf: BehavioralLeaf, now: Date) => Promise<Array<{ distinctId: string; n: number }>>;

/** Events per name of one project in [since, until] (both included); names without events absent. */
export type EventVolumes = (teamId: number, names: string[], since: Date, until: Date) => Promise<Map<string, number>>;

/** A mutable slot, so the event store can be opened after the stores that read it. */
export interface EventsSourceRef {
  current?: EventsSource;
  /**
   * Where the events are in another engine (ClickHouse) and `current` is unset: behavioural
   * conditions are counted there, and the rest of the calculation runs here over the counts.
   */
  behavioralCounts?: BehavioralCounts;
  /** Where the events are in another engine (ClickHouse): event definitions' volumes are counted there. */
  eventVolumes?: EventVolumes;
  /**
   * Write persons still held in memory by ingestion, so a calculation reads current persons
   * (and load the project's, where they are kept elsewhere than DuckDB: see PersonHome).
   */
  syncPersons?: (teamId?: number) => Promise<void>;
}
