import { Elysia, t } from 'elysia';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { authPlugin, organizationIds, resolveProject } from '../../http/auth';
import { paginate, parsePage } from '../../http/pagination';
import { Envelope, ErrorBody, PageQuery, authErrors } from '../../http/schemas';
import { ProjectBasic, ProjectCreateBody, ProjectFull, ProjectParams, ProjectUpdateBody } from './model';
import { toProjectBasic, toProjectFull, toProjectPatch } from './service';

export const projectsModule = (deps: Deps) => {
  const { management } = deps.storage;
  const levelIn = (principal: { memberships: Map<string, number> }, organizationId: string) => principal.memberships.get(organizationId) ?? 0;
  return new Elysia({ name: 'projects', prefix: '/api/projects', detail: { tags: ['projects'] } })
    .use(authPlugin(deps))
    .get(
      '/',
      async ({ principal, query, request }) => {
        const page = parsePage(query);
        const { count, results } = await management.listProjects(organizationIds(principal), page);
        return paginate(request.url, page, count, results.map((p) => toProjectBasic(p, levelIn(principal, p.organizationId))));
      },
      { auth: true, query: PageQuery, response: { 200: Envelope(ProjectBasic), ...authErrors }, detail: { summary: 'List projects' } },
    )
    .post(
      '/',
      async ({ principal, body, set }) => {
        const organizationId = principal.user.currentOrganizationId;
        if (!organizationId || !principal.memberships.has(organizationId)) throw new AppError('not_found', 'Not found.');
        const patch = toProjectPatch(body);
        const project = await management.createProject(organizationId, patch.name!, patch.settings);
        set.status = 201;
        return toProjectFull(project, levelIn(principal, organizationId), deps.config.EVENTS_RETENTION_DAYS);
      },
      { auth: true, body: ProjectCreateBody, response: { 201: ProjectFull, 400: ErrorBody, ...authErrors }, detail: { summary: 'Create a project' } },
    )
    .get(
      '/:project_id/',
      async ({ principal, params }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        return toProjectFull(project, levelIn(principal, project.organizationId), deps.config.EVENTS_RETENTION_DAYS);
      },
      { auth: true, params: ProjectParams, response: { 200: ProjectFull, ...authErrors }, detail: { summary: 'Retrieve a project' } },
    )
    .patch(
      '/:project_id/',
      async ({ principal, params, body }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        const updated = await deps.storage.updateProject(project.id, toProjectPatch(body));
        return toProjectFull(updated, levelIn(principal, project.organizationId), deps.config.EVENTS_RETENTION_DAYS);
      },
      {
        auth: true,
        params: ProjectParams,
        body: ProjectUpdateBody,
        response: { 200: ProjectFull, 400: ErrorBody, ...authErrors },
        detail: { summary: 'Update a project (partial)' },
      },
    )
    .delete(
      '/:project_id/',
      async ({ principal, params, set }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        await deps.storage.deleteProject(project.id);
        set.status = 204;
      },
      { auth: true, params: ProjectParams, response: { 204: t.Void(), ...authErrors }, detail: { summary: 'Delete a project and all its data' } },
    );
};
