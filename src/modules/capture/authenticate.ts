import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import type { Project } from '../../storage';

const INVALID_PROJECT_KEY = 'Project API key invalid. You can find your project API key in PostHog project settings.';

/**
 * The project a public request writes to. A project key (`phc_…`) names it; the spec also lets a
 * personal key (`phx_…`) stand in, with `project_id` naming one of its owner's projects.
 */
export async function projectForKey(deps: Deps, token: string | null, projectId: string | null): Promise<Project> {
  if (!token) {
    throw new AppError('missing_api_key', 'API key not provided. You can find your project API key in PostHog project settings.');
  }
  if (token.startsWith('phx_')) {
    const principal = await deps.storage.management.authenticateKey(token);
    if (!principal) throw new AppError('invalid_personal_api_key', 'Invalid Personal API key.');
    const id = projectId !== null && /^\d{1,9}$/.test(projectId.trim()) ? Number(projectId) : null;
    const project = id === null ? null : await deps.storage.management.getProject(id, [...principal.memberships.keys()]);
    if (!project) throw new AppError('invalid_project', 'Invalid Project ID.', 'project_id');
    return project;
  }
  const project = await deps.storage.projectByToken(token);
  if (!project) throw new AppError('invalid_api_key', INVALID_PROJECT_KEY);
  return project;
}
