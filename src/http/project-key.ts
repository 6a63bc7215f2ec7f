import type { Deps } from '../deps';
import { AppError } from '../errors';
import type { Project } from '../storage';

const INVALID_PROJECT_KEY = 'Project API key invalid. You can find your project API key in PostHog project settings.';

/**
 * The project a public request (capture, flag checks) is for. A project key (`phc_…`, from the
 * cache) names it; the spec also lets a personal key (`phx_…`) stand in, with `project_id`
 * naming one of its owner's projects. `missingKey` is the endpoint's own wording for no key.
 */
export async function projectForPublicKey(deps: Deps, token: string | null, projectId: string | null, missingKey: string): Promise<Project> {
  if (!token) throw new AppError('missing_api_key', missingKey);
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
