import type { FeatureFlag, FlagFilters } from '../../core/flags/types';

/** A flag as stored: the evaluator's shape plus who made it, when, and how often it changed. */
export interface StoredFlag extends FeatureFlag {
  teamId: number;
  createdBy: number | null;
  createdAt: Date;
  updatedAt: Date;
  /** 1 on creation, +1 on every change (reported as `metadata.version` by `/flags`). */
  version: number;
}

/** Every flag of one project, soft-deleted ones included, in creation (id) order; never mutated. */
export interface TeamFlags {
  readonly teamId: number;
  readonly flags: readonly StoredFlag[];
}

export interface NewFlag {
  key: string;
  name: string;
  filters: FlagFilters;
  active: boolean;
  ensureExperienceContinuity: boolean;
  createdBy: number | null;
}

export interface FlagPatch {
  key?: string;
  name?: string;
  filters?: FlagFilters;
  active?: boolean;
  deleted?: boolean;
  ensureExperienceContinuity?: boolean;
}

/** Person uuid → flag key → the hash key the person keeps for that flag. */
export type HashKeyOverrides = ReadonlyMap<string, Readonly<Record<string, string>>>;

export interface FlagStore {
  /**
   * The project's flags, from memory after the first call; every change made through this store
   * replaces the snapshot, so a flag check does no database work.
   */
  forTeam(teamId: number): Promise<TeamFlags>;
  /** The snapshot `forTeam` would give, when it is already in memory: a flag check need not wait. */
  cachedForTeam(teamId: number): TeamFlags | undefined;
  /** Throws AppError `unique` (attr `key`) when a live flag already has the key. */
  create(teamId: number, flag: NewFlag, now: Date): Promise<StoredFlag>;
  /** Null when the project has no flag with this id. Same uniqueness rule as `create`. */
  update(teamId: number, id: number, patch: FlagPatch, now: Date): Promise<StoredFlag | null>;
  /** The project's stored continuity hash keys (loaded once, then kept in memory). */
  hashKeyOverrides(teamId: number): Promise<HashKeyOverrides>;
  /** `hashKeyOverrides`, when already in memory. */
  cachedHashKeyOverrides(teamId: number): HashKeyOverrides | undefined;
  /** Store hash keys the person does not have yet; existing ones are never replaced. */
  addHashKeyOverrides(teamId: number, personUuid: string, overrides: Record<string, string>): Promise<void>;
  /** Forget a deleted person's hash keys (stored and in memory). */
  deletePersonHashKeys(teamId: number, personUuid: string): Promise<void>;
  deleteTeam(teamId: number): Promise<void>;
}

/**
 * Where an engine keeps flags and hash keys (the flag store caches over it). `create` and
 * `update` throw AppError `unique` (attr `key`) when a live flag of the project has the key.
 */
export interface FlagRows {
  /** Every flag of the project, soft-deleted ones included, in id order. */
  load(teamId: number): Promise<StoredFlag[]>;
  loadHashKeyOverrides(teamId: number): Promise<Array<{ personUuid: string; flagKey: string; hashKey: string }>>;
  create(teamId: number, flag: NewFlag, now: Date): Promise<StoredFlag>;
  update(teamId: number, id: number, patch: FlagPatch, now: Date): Promise<StoredFlag | null>;
  /** Insert (flag key, hash key) pairs the person does not have; an existing pair is kept. */
  addHashKeyOverrides(teamId: number, personUuid: string, overrides: Array<[string, string]>): Promise<void>;
  /** Every hash key of one person (an erased person's). */
  deletePersonHashKeys(teamId: number, personUuid: string): Promise<void>;
  deleteTeam(teamId: number): Promise<void>;
}
