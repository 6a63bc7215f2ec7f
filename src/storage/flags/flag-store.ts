import type { FlagFilters } from '../../core/flags/types';
import { AppError } from '../../errors';
import type { Database, Row, Tx } from '../db';
import type { FlagPatch, FlagStore, HashKeyOverrides, NewFlag, StoredFlag, TeamFlags } from './types';

const DUPLICATE_KEY = 'There is already a feature flag with this key.';

const toFlag = (r: Row): StoredFlag => ({
  id: r.id as number,
  teamId: r.team_id as number,
  key: r.key as string,
  name: r.name as string,
  filters: JSON.parse(r.filters as string) as FlagFilters,
  active: r.active as boolean,
  deleted: r.deleted as boolean,
  ensure_experience_continuity: r.ensure_experience_continuity as boolean,
  createdBy: (r.created_by as number | null) ?? null,
  createdAt: r.created_at as Date,
  updatedAt: r.updated_at as Date,
  version: r.version as number,
});

/** PostHog frees a key held only by soft-deleted flags by hard-deleting them, then checks live ones. */
async function claimKey(tx: Tx, teamId: number, key: string, exceptId: number) {
  await tx.run('DELETE FROM feature_flags WHERE team_id = ? AND key = ? AND deleted AND id <> ?', [teamId, key, exceptId]);
  const taken = await tx.query('SELECT id FROM feature_flags WHERE team_id = ? AND key = ? AND NOT deleted AND id <> ?', [teamId, key, exceptId]);
  if (taken.length) throw new AppError('unique', DUPLICATE_KEY, 'key');
}

const PATCH_COLUMNS: Array<[keyof FlagPatch, string, (v: never) => unknown]> = [
  ['key', 'key', (v: string) => v],
  ['name', 'name', (v: string) => v],
  ['filters', 'filters', (v: FlagFilters) => JSON.stringify(v)],
  ['active', 'active', (v: boolean) => v],
  ['deleted', 'deleted', (v: boolean) => v],
  ['ensureExperienceContinuity', 'ensure_experience_continuity', (v: boolean) => v],
];

/**
 * Flags per project in memory (all of a project's flags are read at once: a project has tens to
 * hundreds). The cached snapshot is a promise stored before the read starts and dropped after
 * every committed change, so a reader never sees a snapshot older than the last change it saw.
 */
export function createFlagStore(db: Database): FlagStore {
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

  const load = async (teamId: number): Promise<TeamFlags> => {
    const rows = await db.query('SELECT * FROM feature_flags WHERE team_id = ? ORDER BY id', [teamId]);
    return Object.freeze({ teamId, flags: Object.freeze(rows.map(toFlag)) });
  };

  const changed = <T>(teamId: number, result: T): T => {
    snapshots.delete(teamId);
    settledSnapshots.delete(teamId);
    return result;
  };

  const loadOverrides = async (teamId: number) => {
    const rows = await db.query<{ person_uuid: string; feature_flag_key: string; hash_key: string }>(
      'SELECT person_uuid::VARCHAR AS person_uuid, feature_flag_key, hash_key FROM feature_flag_hash_key_overrides WHERE team_id = ?',
      [teamId],
    );
    const byPerson = new Map<string, Record<string, string>>();
    for (const r of rows) {
      const own = byPerson.get(r.person_uuid) ?? {};
      own[r.feature_flag_key] = r.hash_key;
      byPerson.set(r.person_uuid, own);
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
      const row = await db.transaction(async (tx) => {
        await claimKey(tx, teamId, flag.key, -1);
        const [inserted] = await tx.query(
          `INSERT INTO feature_flags (team_id, key, name, filters, active, deleted, ensure_experience_continuity, created_by, created_at, updated_at, version)
           VALUES (?, ?, ?, ?, ?, false, ?, ?, ?, ?, 1) RETURNING *`,
          [teamId, flag.key, flag.name, JSON.stringify(flag.filters), flag.active, flag.ensureExperienceContinuity, flag.createdBy, now, now],
        );
        return inserted;
      });
      return changed(teamId, toFlag(row));
    },

    async update(teamId, id, patch, now) {
      const row = await db.transaction(async (tx) => {
        const [current] = await tx.query('SELECT * FROM feature_flags WHERE team_id = ? AND id = ?', [teamId, id]);
        if (!current) return null;
        const key = patch.key ?? (current.key as string);
        const deleted = patch.deleted ?? (current.deleted as boolean);
        if (!deleted) await claimKey(tx, teamId, key, id);
        const sets: string[] = ['updated_at = ?', 'version = version + 1'];
        const params: Array<string | number | boolean | Date | null> = [now];
        for (const [field, column, encode] of PATCH_COLUMNS) {
          if (patch[field] === undefined) continue;
          sets.push(`${column} = ?`);
          params.push(encode(patch[field] as never) as string | boolean);
        }
        const [updated] = await tx.query(`UPDATE feature_flags SET ${sets.join(', ')} WHERE team_id = ? AND id = ? RETURNING *`, [
          ...params,
          teamId,
          id,
        ]);
        return updated;
      });
      return row ? changed(teamId, toFlag(row)) : null;
    },

    async hashKeyOverrides(teamId): Promise<HashKeyOverrides> {
      return teamOverrides(teamId);
    },

    async addHashKeyOverrides(teamId, personUuid, wanted) {
      const byPerson = await teamOverrides(teamId);
      const own = byPerson.get(personUuid) ?? {};
      const missing = Object.entries(wanted).filter(([key]) => own[key] === undefined);
      if (!missing.length) return;
      await db.transaction(async (tx) => {
        for (const [key, hashKey] of missing) {
          await tx.run(
            `INSERT INTO feature_flag_hash_key_overrides (team_id, person_uuid, feature_flag_key, hash_key) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
            [teamId, personUuid, key, hashKey],
          );
        }
      });
      // Concurrent requests may have added some meanwhile: the first stored value wins, as in SQL.
      const latest = { ...byPerson.get(personUuid) };
      for (const [key, hashKey] of missing) latest[key] ??= hashKey;
      byPerson.set(personUuid, latest);
    },

    async deletePersonHashKeys(teamId, personUuid) {
      await db.run('DELETE FROM feature_flag_hash_key_overrides WHERE team_id = ? AND person_uuid = TRY_CAST(? AS UUID)', [teamId, personUuid]);
      (await overrides.get(teamId)?.catch(() => undefined))?.delete(personUuid);
    },

    async deleteTeam(teamId) {
      await db.transaction(async (tx) => {
        await tx.run('DELETE FROM feature_flags WHERE team_id = ?', [teamId]);
        await tx.run('DELETE FROM feature_flag_hash_key_overrides WHERE team_id = ?', [teamId]);
      });
      snapshots.delete(teamId);
      settledSnapshots.delete(teamId);
      overrides.delete(teamId);
      settledOverrides.delete(teamId);
    },
  };
}
