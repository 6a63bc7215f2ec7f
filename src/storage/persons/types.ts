import type { PersonEvent, PersonPlan } from '../../core/ingest/person-updates';

export interface Person {
  /** PostHog's integer id (stable for the life of the person). */
  id: number;
  uuid: string;
  teamId: number;
  properties: Record<string, unknown>;
  isIdentified: boolean;
  /** Epoch ms. */
  createdAt: number;
  distinctIds: string[];
}

export interface Group {
  groupType: string;
  groupTypeIndex: number;
  groupKey: string;
  properties: Record<string, unknown>;
}

export interface PersonStore {
  /**
   * Apply what one event does to persons and groups (in memory, at once) and return the event's
   * person uuid. Changes reach the database at the next `flush()`, which the event store runs
   * before it writes the events, so every stored event's person changes are stored too.
   * `personIdHint` re-uses a person uuid already written on the event (WAL replay after a crash).
   */
  processEvent(teamId: number, event: PersonEvent, personIdHint?: string | null): PersonPlan;
  /** Load a project's persons into memory; call once before `processEvent` for that project. */
  ensureLoaded(teamId: number): Promise<void>;
  isLoaded(teamId: number): boolean;
  findByDistinctId(teamId: number, distinctId: string): Person | null;
  findByUuid(teamId: number, uuid: string): Person | null;
  /** By PostHog's integer id (a scan: the API's retrieve, not a hot path). */
  findById(teamId: number, id: number): Person | null;
  /**
   * A page of the project's persons that `where` keeps, newest first (created_at, then id), and
   * how many it keeps in all. Load the project first (`ensureLoaded`).
   */
  listPersons(teamId: number, where: (person: Person) => boolean, page: { limit: number; offset: number }): { count: number; results: Person[] };
  /**
   * Merge `set` into a person's properties the way a `$set` does (same in-memory update, written
   * at the next flush); null when the project has no such person.
   */
  setProperties(teamId: number, uuid: string, set: Record<string, unknown>): Person | null;
  /** Group type name → index (PostHog's `group_type_index`: the lowest free when a type is first met; with a home, as the home numbers them). */
  groupTypeMapping(teamId: number): Record<string, number>;
  findGroup(teamId: number, groupType: string, groupKey: string): Group | null;
  /** Persist every pending change (single-flight). */
  flush(): Promise<void>;
  pendingChanges(): number;
  /**
   * Delete a person and their distinct ids (those in memory, and `distinctIds` known from before
   * a restart), in memory and in the tables; a later event with one of those ids makes a new
   * person, as in PostHog. Idempotent; returns the person as they were, or null when memory no
   * longer held them.
   */
  deletePerson(teamId: number, uuid: string, distinctIds?: readonly string[]): Promise<Person | null>;
  deleteTeam(teamId: number): Promise<void>;
}

/** One project's persons, distinct ids and groups as an engine keeps them. */
export interface PersonRows {
  persons: Array<Omit<Person, 'teamId' | 'distinctIds'>>;
  distinctIds: Array<{ distinctId: string; personUuid: string }>;
  groups: Group[];
}

/** Where a load puts the pages it reads: every person before any distinct id, so each id finds its person. */
export interface PersonRowsSink {
  persons(rows: PersonRows['persons']): void;
  distinctIds(rows: PersonRows['distinctIds']): void;
  groups(rows: Group[]): void;
}

/** What a flush writes: each changed person (null: merged away), distinct id (null: unlinked) and group. */
export interface PersonChanges {
  /**
   * The persons as they are in memory: `write` may give a provisional id (below 0) its real one.
   * `created`: made since the last write that held them, so written whether or not a row holds
   * them; any other person is only updated where its row still is (another process may have
   * deleted it, and its notice not reached this one yet: an erasure is not undone).
   */
  persons: Array<{ teamId: number; uuid: string; person: Person | null; created?: boolean }>;
  distinctIds: Array<{ teamId: number; distinctId: string; personUuid: string | null }>;
  /**
   * The groups as they are in memory: a home's `write` gives each its type's index as the home
   * numbers the project's types, or NO_GROUP_TYPE_INDEX to one of a type the home has no index
   * left for (the project's five are taken), which it does not write.
   */
  groups: Array<{ teamId: number; group: Group }>;
}

/** A group's index when the home refused its type (see `PersonChanges.groups`). */
export const NO_GROUP_TYPE_INDEX = -1;

/**
 * Where persons are kept when another engine than DuckDB holds the management data
 * (PostgreSQL): the person store loads a project from it and writes every flush to it first.
 * DuckDB then holds a copy beside the events (as PostHog keeps persons in ClickHouse too), for
 * the statements that join persons to events: the events list, exports, cohort calculations.
 */
export interface PersonHome {
  /** A project's persons, then its distinct ids, then its groups, handed to `into` a page at a time (one snapshot). */
  load(teamId: number, into: PersonRowsSink): Promise<void>;
  write(changes: PersonChanges): Promise<void>;
  deleteTeam(teamId: number): Promise<void>;
  /** A new person's id, from ids reserved ahead; below 0 when none is left (`write` replaces it). */
  takeId(): number;
  /** Whether the reserve runs low: `reserveIds` before the next batch of events. */
  needsIds(): boolean;
  reserveIds(): Promise<void>;
  /**
   * Other processes' changes to persons (several servers on one home): `keys` names the person
   * uuids and distinct ids changed, or is null when any of the project's may have; `teamId` null:
   * any project's (changes may have been missed).
   */
  onChange(listener: (teamId: number | null, keys: { persons: string[]; distinctIds: string[] } | null) => void): void;
  /** Those persons, and the persons those distinct ids point to now (an absent one is gone). */
  loadSome(teamId: number, personUuids: readonly string[], distinctIds: readonly string[]): Promise<PersonRows>;
}

/**
 * A copy of persons kept beside the events in another engine (ClickHouse's `persons` and
 * `person_distinct_ids`, as PostHog keeps them), for the statements that join persons to events
 * there. Every flush writes to it after the home; a flush it fails is kept and written again whole
 * (a write is idempotent: the copy keeps each row's latest version). A person null is deleted
 * (merged away, or erased); a distinct id without a person, unlinked.
 */
export interface PersonMirror {
  write(changes: PersonChanges): Promise<void>;
  /** After `write` deleted them: drop every earlier version of the person and their distinct ids too (an erasure leaves nothing readable on disk). */
  erase(teamId: number, uuid: string): Promise<void>;
  deleteTeam(teamId: number): Promise<void>;
  /** Write `all()` (a project's every person and distinct id) unless the copy has held the project before. */
  seed(teamId: number, all: () => PersonChanges): Promise<void>;
}
