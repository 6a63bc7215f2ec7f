import { createHash } from 'node:crypto';
import { listConditions } from '../../core/flags/match-condition';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { organizationIds } from '../../http/auth';
import type { Principal, Project, StoredFlag } from '../../storage';
import { cohortSource, loadCohortDefinitions, referencedCohortIds } from './cohort-source';

const INVALID_PROJECT_KEY = 'Project API key invalid. You can find your project API key in PostHog project settings.';

/**
 * The project a local-evaluation poll is for: `?token=` names it (posthog-node always sends its
 * project key), else the caller's current project. A token of another organization is a 404.
 */
export async function projectForPoll(deps: Deps, principal: Principal, token: string | undefined): Promise<Project> {
  if (token) {
    const project = await deps.storage.projectByToken(token);
    if (!project) throw new AppError('invalid_api_key', INVALID_PROJECT_KEY);
    if (!organizationIds(principal).includes(project.organizationId)) throw new AppError('not_found', 'Not found.');
    return project;
  }
  const id = principal.user.currentProjectId;
  const project = id === null ? null : await deps.storage.management.getProject(id, organizationIds(principal));
  if (!project) throw new AppError('not_found', 'Not found.');
  return project;
}

const toLocalFlag = (flag: StoredFlag) => ({
  id: flag.id,
  team_id: flag.teamId,
  name: flag.name,
  key: flag.key,
  filters: flag.filters as unknown as Record<string, unknown>,
  deleted: flag.deleted,
  active: flag.active,
  ensure_experience_continuity: flag.ensure_experience_continuity,
  version: flag.version,
});

const flagCohortIds = (flag: StoredFlag) =>
  referencedCohortIds({ type: 'OR', values: listConditions(flag).flatMap((condition) => condition.properties ?? []) });

/**
 * `{flags, group_type_mapping, cohorts}` as PostHog's `local_evaluation` serves it: active, live
 * flags with their stored filters; with `send_cohorts`, the dynamic cohorts they reference (and
 * the cohorts those reference) in PostHog's property-group shape. Without `send_cohorts` PostHog
 * inlines single-cohort conditions; every server SDK we serve sends it, so flags go out as stored.
 */
export async function localEvaluationDefinitions(deps: Deps, project: Project, sendCohorts: boolean) {
  const { flags } = await deps.storage.flags.forTeam(project.id);
  const live = flags.filter((flag) => flag.active && !flag.deleted);
  await deps.storage.persons.ensureLoaded(project.id);
  const mapping = deps.storage.persons.groupTypeMapping(project.id);
  const groupTypeMapping = Object.fromEntries(Object.entries(mapping).map(([name, index]) => [String(index), name]));
  const source = cohortSource(deps);
  const cohorts = sendCohorts && source ? await loadCohortDefinitions(source, project.id, live.flatMap(flagCohortIds)) : {};
  return { flags: live.map(toLocalFlag), group_type_mapping: groupTypeMapping, cohorts };
}

/** A strong ETag of the body, so pollers get 304 until a flag, cohort or group type changes. */
export const etagOf = (body: string) => `"${createHash('sha1').update(body).digest('hex')}"`;

/** `If-None-Match` may list several tags and may mark them weak (`W/"…"`). */
export function matchesEtag(header: string | null, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
