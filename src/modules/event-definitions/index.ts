import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { authPlugin, resolveProject, refuseMethod } from '../../http/auth';
import { paginate, parsePage } from '../../http/pagination';
import { Envelope, ErrorBody, authErrors } from '../../http/schemas';
import { DefinitionIdParams, DefinitionListQuery, DefinitionParams, DefinitionPatchBody, EventDefinition } from './model';
import { toDefinitionBodies, toDefinitionPatch, toDefinitionQuery } from './service';

const notFound = () => new AppError('not_found', 'Not found.');

/**
 * Event definitions of a project (`/api/projects/:project_id/event_definitions/`). Ingestion
 * creates them; the API lists, reads and annotates them, and neither creates nor deletes.
 */
export const eventDefinitionsModule = (deps: Deps) => {
  const { definitions } = deps.storage;
  const find = async (teamId: number, id: string) => {
    const definition = await definitions.getEventDefinition(teamId, id);
    if (!definition) throw notFound();
    return definition;
  };
  return new Elysia({ name: 'event-definitions', prefix: '/api/projects/:project_id/event_definitions', detail: { tags: ['event definitions'] } })
    .use(authPlugin(deps))
    .get(
      '/',
      async ({ principal, params, query, request }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        const page = parsePage(query);
        const { count, results } = await definitions.listEventDefinitions(project.id, toDefinitionQuery(query, page));
        return paginate(request.url, page, count, await toDefinitionBodies(deps, project.id, results));
      },
      {
        auth: true,
        params: DefinitionParams,
        query: DefinitionListQuery,
        response: { 200: Envelope(EventDefinition), ...authErrors },
        detail: { summary: 'List event definitions (recently seen first, then by name)' },
      },
    )
    .post(
      '/',
      refuseMethod(deps),
      { auth: true, params: DefinitionParams, response: { 405: ErrorBody, ...authErrors }, detail: { summary: 'Refused: ingestion creates definitions' } },
    )
    .get(
      '/:id/',
      async ({ principal, params }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        const [body] = await toDefinitionBodies(deps, project.id, [await find(project.id, params.id)]);
        return body;
      },
      { auth: true, params: DefinitionIdParams, response: { 200: EventDefinition, ...authErrors }, detail: { summary: 'Retrieve an event definition' } },
    )
    .patch(
      '/:id/',
      async ({ principal, params, body }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        await find(project.id, params.id);
        const patch = await toDefinitionPatch(deps, project, body);
        const updated = await definitions.updateEventDefinition(project.id, params.id, patch, principal.user.id, deps.now());
        if (!updated) throw notFound();
        const [result] = await toDefinitionBodies(deps, project.id, [updated]);
        return result;
      },
      {
        auth: true,
        params: DefinitionIdParams,
        body: DefinitionPatchBody,
        response: { 200: EventDefinition, 400: ErrorBody, ...authErrors },
        detail: { summary: 'Update owner, description, tags, verified, post_to_chat' },
      },
    )
    .delete(
      '/:id/',
      refuseMethod(deps),
      { auth: true, params: DefinitionIdParams, response: { 405: ErrorBody, ...authErrors }, detail: { summary: 'Refused: definitions are not deleted' } },
    );
};
