import { AppError } from '../../errors';
import { claimFlagKey, DUPLICATE_FLAG_KEY, FLAG_PATCH_COLUMNS, toFlag } from '../flags/flag-columns';
import type { FlagRows } from '../flags/types';
import { isUniqueViolation, isUuid, Params, type Pg, impossibleId, questionMarks } from './client';
import type { Changes } from './changes';

/**
 * Flags and continuity hash keys in PostgreSQL. Two processes may write one project's flags at
 * once: the partial unique index on live keys decides, and its violation is the same `unique`
 * error as the check before it. Every change is told to the other processes (`flags`,
 * `hash_keys`), which drop their snapshot of the project.
 */

const COLUMNS = `id, team_id, key, name, filters::text AS filters, active, deleted, ensure_experience_continuity, created_by, created_at, updated_at, version`;

const duplicateKey = (error: unknown): never => {
  if (isUniqueViolation(error)) throw new AppError('unique', DUPLICATE_FLAG_KEY, 'key');
  throw error;
};

export function createPostgresFlagRows(pg: Pg, changes: Changes): FlagRows {
  return {
    async load(teamId) {
      return (await pg.query(`SELECT ${COLUMNS} FROM feature_flags WHERE team_id = $1 ORDER BY id`, [teamId])).map(toFlag);
    },

    async loadHashKeyOverrides(teamId) {
      const rows = await pg.query<{ person_uuid: string; feature_flag_key: string; hash_key: string }>(
        'SELECT person_uuid::text AS person_uuid, feature_flag_key, hash_key FROM feature_flag_hash_key_overrides WHERE team_id = $1',
        [teamId],
      );
      return rows.map((r) => ({ personUuid: r.person_uuid, flagKey: r.feature_flag_key, hashKey: r.hash_key }));
    },

    async create(teamId, flag, now) {
      const row = await pg
        .transaction(async (tx) => {
          await claimFlagKey(questionMarks(tx), teamId, flag.key, -1);
          const [inserted] = await tx.query(
            `INSERT INTO feature_flags (team_id, key, name, filters, active, deleted, ensure_experience_continuity, created_by, created_at, updated_at, version)
             VALUES ($1, $2, $3, $4::text::json, $5, false, $6, $7, $8, $9, 1) RETURNING ${COLUMNS}`,
            [teamId, flag.key, flag.name, JSON.stringify(flag.filters), flag.active, flag.ensureExperienceContinuity, flag.createdBy, now, now],
          );
          await changes.publish(tx, { kind: 'flags', teamId });
          return inserted;
        })
        .catch(duplicateKey);
      return toFlag(row);
    },

    async update(teamId, id, patch, now) {
      if (impossibleId(id)) return null;
      const row = await pg
        .transaction(async (tx) => {
          const [current] = await tx.query<{ key: string; deleted: boolean }>('SELECT key, deleted FROM feature_flags WHERE team_id = $1 AND id = $2 FOR UPDATE', [
            teamId,
            id,
          ]);
          if (!current) return null;
          if (!(patch.deleted ?? current.deleted)) await claimFlagKey(questionMarks(tx), teamId, patch.key ?? current.key, id);
          const p = new Params();
          const sets = [`updated_at = ${p.add(now)}`, 'version = version + 1'];
          for (const [field, column, encode] of FLAG_PATCH_COLUMNS) {
            if (patch[field] === undefined) continue;
            sets.push(`${column} = ${p.add(encode(patch[field] as never))}${column === 'filters' ? '::text::json' : ''}`);
          }
          const [updated] = await tx.query(`UPDATE feature_flags SET ${sets.join(', ')} WHERE team_id = ${p.add(teamId)} AND id = ${p.add(id)} RETURNING ${COLUMNS}`, p.values);
          await changes.publish(tx, { kind: 'flags', teamId });
          return updated;
        })
        .catch(duplicateKey);
      return row ? toFlag(row) : null;
    },

    async addHashKeyOverrides(teamId, personUuid, overrides) {
      if (!isUuid(personUuid)) return;
      await pg.transaction(async (tx) => {
        await tx.run(
          `INSERT INTO feature_flag_hash_key_overrides (team_id, person_uuid, feature_flag_key, hash_key)
           SELECT $1, $2, key, hash_key FROM unnest($3::text[], $4::text[]) AS o(key, hash_key) ON CONFLICT DO NOTHING`,
          [teamId, personUuid, overrides.map(([key]) => key), overrides.map(([, hashKey]) => hashKey)],
        );
        await changes.publish(tx, { kind: 'hash_keys', teamId });
      });
    },

    async deletePersonHashKeys(teamId, personUuid) {
      if (!isUuid(personUuid)) return;
      await pg.transaction(async (tx) => {
        await tx.run('DELETE FROM feature_flag_hash_key_overrides WHERE team_id = $1 AND person_uuid = $2', [teamId, personUuid]);
        await changes.publish(tx, { kind: 'hash_keys', teamId });
      });
    },

    async deleteTeam(teamId) {
      await pg.transaction(async (tx) => {
        await tx.run('DELETE FROM feature_flags WHERE team_id = $1', [teamId]);
        await tx.run('DELETE FROM feature_flag_hash_key_overrides WHERE team_id = $1', [teamId]);
        await changes.publish(tx, { kind: 'flags', teamId });
        await changes.publish(tx, { kind: 'hash_keys', teamId });
      });
    },
  };
}
