import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import type { Project } from '../../storage';

const NO_KEY = 'No project API key provided. You can find your project API key in PostHog project settings.';
const INVALID_PROJECT_KEY = 'Project API key invalid. You can find your project API key in PostHog project settings.';

/**
 * The project a flag check is for, as the spec allows: a project key (`phc_…`, from the cache), or
 * a personal key (`phx_…`) with `project_id` naming one of its owner's projects.
 */
export async function projectForFlags(deps: Deps, token: string | null, projectId: string | null): Promise<Project> {
  if (!token) throw new AppError('missing_api_key', NO_KEY);
  const project = await deps.storage.projectByToken(token);
  if (project) return project;
  if (!token.startsWith('phx_')) throw new AppError('invalid_api_key', INVALID_PROJECT_KEY);
  const principal = await deps.storage.management.authenticateKey(token);
  if (!principal) throw new AppError('invalid_personal_api_key', 'Invalid Personal API key.');
  const id = projectId !== null && /^\d{1,9}$/.test(projectId.trim()) ? Number(projectId) : null;
  const owned = id === null ? null : await deps.storage.management.getProject(id, [...principal.memberships.keys()]);
  if (!owned) throw new AppError('invalid_project', 'Invalid Project ID.', 'project_id');
  return owned;
}
