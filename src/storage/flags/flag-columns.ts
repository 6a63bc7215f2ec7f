import type { FlagFilters } from '../../core/flags/types';
import { AppError } from '../../errors';
import type { Row, Tx } from '../db';
import type { FlagPatch, StoredFlag } from './types';

/** A flag's row as either engine gives it back, its patch as columns, and the key check both stores make in their writes. */

export const DUPLICATE_FLAG_KEY = 'There is already a feature flag with this key.';

export const toFlag = (r: Row): StoredFlag => ({
  id: Number(r.id),
  teamId: Number(r.team_id),
  key: r.key as string,
  name: r.name as string,
  filters: JSON.parse(r.filters as string) as FlagFilters,
  active: r.active as boolean,
  deleted: r.deleted as boolean,
  ensure_experience_continuity: r.ensure_experience_continuity as boolean,
  createdBy: r.created_by == null ? null : Number(r.created_by),
  createdAt: r.created_at as Date,
  updatedAt: r.updated_at as Date,
  version: Number(r.version),
});

/** Patch field → column, and how its value is stored. */
export const FLAG_PATCH_COLUMNS: Array<[keyof FlagPatch, string, (v: never) => unknown]> = [
  ['key', 'key', (v: string) => v],
  ['name', 'name', (v: string) => v],
  ['filters', 'filters', (v: FlagFilters) => JSON.stringify(v)],
  ['active', 'active', (v: boolean) => v],
  ['deleted', 'deleted', (v: boolean) => v],
  ['ensureExperienceContinuity', 'ensure_experience_continuity', (v: boolean) => v],
];

/**
 * PostHog frees a key held only by soft-deleted flags by hard-deleting them, then checks live
 * ones. The statements are plain SQL both engines read (PostgreSQL's store numbers the `?`).
 */
export async function claimFlagKey(tx: Tx, teamId: number, key: string, exceptId: number) {
  await tx.run('DELETE FROM feature_flags WHERE team_id = ? AND key = ? AND deleted AND id <> ?', [teamId, key, exceptId]);
  const taken = await tx.query('SELECT id FROM feature_flags WHERE team_id = ? AND key = ? AND NOT deleted AND id <> ?', [teamId, key, exceptId]);
  if (taken.length) throw new AppError('unique', DUPLICATE_FLAG_KEY, 'key');
}
