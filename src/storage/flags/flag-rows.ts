import type { Database } from '../db';
import { claimFlagKey, FLAG_PATCH_COLUMNS, toFlag } from './flag-columns';
import type { FlagRows } from './types';

/** Flags and continuity hash keys in DuckDB (writes are serialized, so the key check in the transaction is enough). */
export function createFlagRows(db: Database): FlagRows {
  return {
    async load(teamId) {
      return (await db.query('SELECT * FROM feature_flags WHERE team_id = ? ORDER BY id', [teamId])).map(toFlag);
    },

    async loadHashKeyOverrides(teamId) {
      const rows = await db.query<{ person_uuid: string; feature_flag_key: string; hash_key: string }>(
        'SELECT person_uuid::VARCHAR AS person_uuid, feature_flag_key, hash_key FROM feature_flag_hash_key_overrides WHERE team_id = ?',
        [teamId],
      );
      return rows.map((r) => ({ personUuid: r.person_uuid, flagKey: r.feature_flag_key, hashKey: r.hash_key }));
    },

    async create(teamId, flag, now) {
      const row = await db.transaction(async (tx) => {
        await claimFlagKey(tx, teamId, flag.key, -1);
        const [inserted] = await tx.query(
          `INSERT INTO feature_flags (team_id, key, name, filters, active, deleted, ensure_experience_continuity, created_by, created_at, updated_at, version)
           VALUES (?, ?, ?, ?, ?, false, ?, ?, ?, ?, 1) RETURNING *`,
          [teamId, flag.key, flag.name, JSON.stringify(flag.filters), flag.active, flag.ensureExperienceContinuity, flag.createdBy, now, now],
        );
        return inserted;
      });
      return toFlag(row);
    },

    async update(teamId, id, patch, now) {
      const row = await db.transaction(async (tx) => {
        const [current] = await tx.query('SELECT * FROM feature_flags WHERE team_id = ? AND id = ?', [teamId, id]);
        if (!current) return null;
        const key = patch.key ?? (current.key as string);
        const deleted = patch.deleted ?? (current.deleted as boolean);
        if (!deleted) await claimFlagKey(tx, teamId, key, id);
        const sets: string[] = ['updated_at = ?', 'version = version + 1'];
        const params: Array<string | number | boolean | Date | null> = [now];
        for (const [field, column, encode] of FLAG_PATCH_COLUMNS) {
          if (patch[field] === undefined) continue;
          sets.push(`${column} = ?`);
          params.push(encode(patch[field] as never) as string | boolean);
        }
        const [updated] = await tx.query(`UPDATE feature_flags SET ${sets.join(', ')} WHERE team_id = ? AND id = ? RETURNING *`, [...params, teamId, id]);
        return updated;
      });
      return row ? toFlag(row) : null;
    },

    async addHashKeyOverrides(teamId, personUuid, overrides) {
      await db.transaction(async (tx) => {
        for (const [key, hashKey] of overrides) {
          await tx.run(
            `INSERT INTO feature_flag_hash_key_overrides (team_id, person_uuid, feature_flag_key, hash_key) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
            [teamId, personUuid, key, hashKey],
          );
        }
      });
    },

    async deletePersonHashKeys(teamId, personUuid) {
      await db.run('DELETE FROM feature_flag_hash_key_overrides WHERE team_id = ? AND person_uuid = TRY_CAST(? AS UUID)', [teamId, personUuid]);
    },

    async deleteTeam(teamId) {
      await db.transaction(async (tx) => {
        await tx.run('DELETE FROM feature_flags WHERE team_id = ?', [teamId]);
        await tx.run('DELETE FROM feature_flag_hash_key_overrides WHERE team_id = ?', [teamId]);
      });
    },
  };
}
