import { listConditions } from '../../core/flags/match-condition';
import type { FlagFilters } from '../../core/flags/types';
import { validateFlagFilters, validateFlagKey } from '../../core/flags/validate-flag';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import type { Page } from '../../http/pagination';
import type { FlagPatch, Principal, Project, StoredFlag, User } from '../../storage';
import { cohortSource, referencedCohortIds } from './cohort-source';

/** What a flag with no `filters` is: on for everyone (PostHog's empty filters read the same way). */
const DEFAULT_FILTERS = { groups: [{ properties: [], rollout_percentage: null }] };

export interface FlagBody {
  key?: unknown;
  name?: string;
  filters?: unknown;
  active?: boolean;
  deleted?: boolean;
  ensure_experience_continuity?: boolean | null;
}

/** PostHog's "simple flag": one condition, no properties, not group-based. */
export const isSimpleFlag = (flag: StoredFlag): boolean => {
  const conditions = listConditions(flag);
  return (
    conditions.length === 1 &&
    conditions.every((condition) => (condition.properties ?? []).length === 0) &&
    (flag.filters.aggregation_group_type_index ?? null) === null
  );
};

const embedUser = (user: User | null | undefined) =>
  user ? { id: user.id, uuid: user.uuid, distinct_id: user.distinctId, first_name: user.firstName, email: user.email } : null;

export function toFlagResponse(flag: StoredFlag, users: ReadonlyMap<number, User | null>) {
  const simple = isSimpleFlag(flag);
  return {
    id: flag.id,
    name: flag.name,
    key: flag.key,
    filters: flag.filters as unknown as Record<string, unknown>,
    deleted: flag.deleted,
    active: flag.active,
    created_by: flag.createdBy === null ? null : embedUser(users.get(flag.createdBy)),
    created_at: flag.createdAt.toISOString(),
    updated_at: flag.updatedAt.toISOString(),
    version: flag.version,
    is_simple_flag: simple,
    rollout_percentage: simple ? (listConditions(flag)[0].rollout_percentage ?? null) : null,
    ensure_experience_continuity: flag.ensure_experience_continuity,
    experiment_set: [],
    surveys: [],
    features: [],
    tags: [],
    can_edit: true,
  };
}

/** The creators of `flags`, one lookup each. */
export async function loadCreators(deps: Deps, flags: StoredFlag[]) {
  const ids = [...new Set(flags.map((f) => f.createdBy).filter((id): id is number => id !== null))];
  const users = await Promise.all(ids.map((id) => deps.storage.management.findUserById(id)));
  return new Map(ids.map((id, i) => [id, users[i]]));
}

/** Flags are checked against the project's cohorts: an unknown cohort is a 400, as in PostHog. */
async function checkCohorts(deps: Deps, teamId: number, filters: FlagFilters) {
  const source = cohortSource(deps);
  if (!source) return;
  const ids = referencedCohortIds({ type: 'OR', values: listConditions({ filters } as StoredFlag).flatMap((c) => c.properties ?? []) });
  for (const id of new Set(ids)) {
    const cohort = await source.getCohort(teamId, id);
    if (!cohort || cohort.deleted) throw new AppError('invalid_input', `Cohort with id ${id} does not exist`, 'filters');
  }
}

async function checkedFilters(deps: Deps, teamId: number, filters: unknown): Promise<FlagFilters> {
  const normalized = validateFlagFilters(filters);
  await checkCohorts(deps, teamId, normalized);
  return normalized;
}

export async function createFlag(deps: Deps, project: Project, principal: Principal, body: FlagBody) {
  const key = validateFlagKey(body.key);
  const filters = await checkedFilters(deps, project.id, body.filters ?? DEFAULT_FILTERS);
  const flag = await deps.storage.flags.create(
    project.id,
    {
      key,
      name: body.name ?? '',
      filters,
      active: body.active ?? true,
      ensureExperienceContinuity: body.ensure_experience_continuity ?? false,
      createdBy: principal.user.id,
    },
    deps.now(),
  );
  return toFlagResponse(flag, new Map([[principal.user.id, principal.user]]));
}

/** A flag of the project by its id; anything else (another project's, not a number) is a 404. */
export async function findFlag(deps: Deps, project: Project, idParam: string): Promise<StoredFlag> {
  const id = /^\d{1,9}$/.test(idParam) ? Number(idParam) : null;
  const { flags } = await deps.storage.flags.forTeam(project.id);
  const flag = id === null ? undefined : flags.find((f) => f.id === id);
  if (!flag) throw new AppError('not_found', 'Not found.');
  return flag;
}

export async function updateFlag(deps: Deps, project: Project, idParam: string, body: FlagBody) {
  const current = await findFlag(deps, project, idParam);
  const patch: FlagPatch = {};
  if (body.key !== undefined) patch.key = validateFlagKey(body.key);
  if (body.name !== undefined) patch.name = body.name;
  // PostHog ignores a PATCH whose filters have no `groups` (partial updates from old UIs).
  const filters = body.filters as Record<string, unknown> | undefined;
  if (filters !== undefined && !(filters && typeof filters === 'object' && !('groups' in filters))) {
    patch.filters = await checkedFilters(deps, project.id, filters);
  }
  if (body.active !== undefined) patch.active = body.active;
  if (body.deleted !== undefined) patch.deleted = body.deleted;
  if (body.ensure_experience_continuity !== undefined) patch.ensureExperienceContinuity = body.ensure_experience_continuity ?? false;
  const updated = await deps.storage.flags.update(project.id, current.id, patch, deps.now());
  if (!updated) throw new AppError('not_found', 'Not found.');
  return toFlagResponse(updated, await loadCreators(deps, [updated]));
}

/** Live flags, newest first, as PostHog lists them. */
export async function listFlags(deps: Deps, project: Project, page: Page) {
  const { flags } = await deps.storage.flags.forTeam(project.id);
  const live = flags.filter((f) => !f.deleted).reverse();
  const results = live.slice(page.offset, page.offset + page.limit);
  const users = await loadCreators(deps, results);
  return { count: live.length, results: results.map((flag) => toFlagResponse(flag, users)) };
}

/** `GET …/feature_flags/:id_or_key/remote_config`: the flag's `true` payload, or null. */
export async function remoteConfigPayload(deps: Deps, project: Project, idOrKey: string): Promise<unknown> {
  const { flags } = await deps.storage.flags.forTeam(project.id);
  const flag = /^\d+$/.test(idOrKey)
    ? flags.find((f) => f.id === Number(idOrKey))
    : flags.find((f) => f.key === idOrKey && !f.deleted);
  if (!flag) throw new AppError('not_found', 'Not found.');
  return flag.filters.payloads?.true ?? null;
}
