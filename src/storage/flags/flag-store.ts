import type { Database } from '../db';
import { createFlagRows } from './flag-rows';
import type { FlagRows, FlagStore, HashKeyOverrides, TeamFlags } from './types';

export function createFlagStore(db: Database): FlagStore {
  return createCachedFlagStore(createFlagRows(db));
}

/** The flag store and what another process's changes call to drop a project's snapshot. */
export interface CachedFlagStore extends FlagStore {
  forgetFlags(teamId: number): void;
  forgetHashKeyOverrides(teamId: number): void;
  /** Every project's snapshots (changes may have been missed). */
  forgetAll(): void;
}

/**
 * Flags per project in memory (all of a project's flags are read at once: a project has tens to
 * hundreds), over any engine's rows. The cached snapshot is a promise stored before the read
 * starts and dropped after every committed change, so a reader never sees a snapshot older than
 * the last change it saw.
 */
export function createCachedFlagStore(rows: FlagRows): CachedFlagStore {
  const snapshots = new Map<number, Promise<TeamFlags>>();
  const overrides = new Map<number, Promise<Map<string, Record<string, string>>>>();
  // The settled values of the promises above, for readers that must not wait; an entry is only
  // ever the value of the promise currently in its map, so dropping the promise drops it too.
  const settledSnapshots = new Map<number, TeamFlags>();
  const settledOverrides = new Map<number, Map<string, Record<string, string>>>();

  const settle = <T>(pending: Map<number, Promise<T>>, settled: Map<number, T>, teamId: number, promise: Promise<T>) => {
    pending.set(teamId, promise);
    promise.then(
      (value) => {
        if (pending.get(teamId) === promise) settled.set(teamId, value);
      },
      () => {
        if (pending.get(teamId) === promise) pending.delete(teamId);
      },
    );
  };

  const load = async (teamId: number): Promise<TeamFlags> => Object.freeze({ teamId, flags: Object.freeze(await rows.load(teamId)) });

  const forgetFlags = (teamId: number) => {
    snapshots.delete(teamId);
    settledSnapshots.delete(teamId);
  };
  const forgetHashKeyOverrides = (teamId: number) => {
    overrides.delete(teamId);
    settledOverrides.delete(teamId);
  };

  const changed = <T>(teamId: number, result: T): T => {
    forgetFlags(teamId);
    return result;
  };

  const loadOverrides = async (teamId: number) => {
    const byPerson = new Map<string, Record<string, string>>();
    for (const r of await rows.loadHashKeyOverrides(teamId)) {
      const own = byPerson.get(r.personUuid) ?? {};
      own[r.flagKey] = r.hashKey;
      byPerson.set(r.personUuid, own);
    }
    return byPerson;
  };

  const teamOverrides = (teamId: number) => {
    let pending = overrides.get(teamId);
    if (!pending) {
      pending = loadOverrides(teamId);
      settle(overrides, settledOverrides, teamId, pending);
    }
    return pending;
  };

  return {
    forTeam(teamId) {
      let pending = snapshots.get(teamId);
      if (!pending) {
        pending = load(teamId);
        settle(snapshots, settledSnapshots, teamId, pending);
      }
      return pending;
    },

    cachedForTeam: (teamId) => settledSnapshots.get(teamId),
    cachedHashKeyOverrides: (teamId) => settledOverrides.get(teamId),

    async create(teamId, flag, now) {
      return changed(teamId, await rows.create(teamId, flag, now));
    },

    async update(teamId, id, patch, now) {
      const flag = await rows.update(teamId, id, patch, now);
      return flag ? changed(teamId, flag) : null;
    },

    async hashKeyOverrides(teamId): Promise<HashKeyOverrides> {
      return teamOverrides(teamId);
    },

    async addHashKeyOverrides(teamId, personUuid, wanted) {
      const byPerson = await teamOverrides(teamId);
      const own = byPerson.get(personUuid) ?? {};
      const missing = Object.entries(wanted).filter(([key]) => own[key] === undefined);
      if (!missing.length) return;
      await rows.addHashKeyOverrides(teamId, personUuid, missing);
      // Concurrent requests may have added some meanwhile: the first stored value wins, as in SQL.
      const latest = { ...byPerson.get(personUuid) };
      for (const [key, hashKey] of missing) latest[key] ??= hashKey;
      byPerson.set(personUuid, latest);
    },

    async deletePersonHashKeys(teamId, personUuid) {
      await rows.deletePersonHashKeys(teamId, personUuid);
      (await overrides.get(teamId)?.catch(() => undefined))?.delete(personUuid);
    },

    async deleteTeam(teamId) {
      await rows.deleteTeam(teamId);
      forgetFlags(teamId);
      forgetHashKeyOverrides(teamId);
    },

    forgetFlags,
    forgetHashKeyOverrides,
    forgetAll() {
      for (const teamId of [...snapshots.keys()]) forgetFlags(teamId);
      for (const teamId of [...overrides.keys()]) forgetHashKeyOverrides(teamId);
    },
  };
}
