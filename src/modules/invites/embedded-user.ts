import type { Deps } from '../../deps';
import type { User } from '../../storage';

/**
 * The embedded user object of `created_by`, `updated_by` and `verified_by` (PostHog's
 * UserBasicSerializer, as the spec lists it). Shared by the invites, cohorts and
 * event-definitions modules.
 */
export const toEmbeddedUser = (user: User) => ({
  id: user.id,
  uuid: user.uuid,
  distinct_id: user.distinctId,
  first_name: user.firstName,
  email: user.email,
});

export type EmbeddedUserBody = ReturnType<typeof toEmbeddedUser>;

/** Embedded users by id, each looked up once; unknown (deleted) users are absent. */
export async function loadEmbeddedUsers(deps: Deps, ids: Array<number | null>): Promise<Map<number, EmbeddedUserBody>> {
  const unique = [...new Set(ids.filter((id): id is number => id !== null))];
  const users = await Promise.all(unique.map((id) => deps.storage.management.findUserById(id)));
  return new Map(users.filter((u): u is User => u !== null).map((u) => [u.id, toEmbeddedUser(u)]));
}
