import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { authPlugin, refuseMethod, resolveProject } from '../../http/auth';
import { paginate, parsePage } from '../../http/pagination';
import { Envelope, ErrorBody, authErrors } from '../../http/schemas';
import { DefinitionIdParams, DefinitionParams, PropertyDefinition, PropertyDefinitionListQuery, PropertyDefinitionPatchBody } from './model';
import { toPropertyBodies, toPropertyPatch, toPropertyQuery } from './service';

const notFound = () => new AppError('not_found', 'Not found.');

/**
 * Property definitions of a project (`/api/projects/:project_id/property_definitions/`):
 * ingestion records each key with the type its values show and the event names that carried
 * it; the API lists, reads and annotates them, and neither creates nor deletes.
 */
export const propertyDefinitionsModule = (deps: Deps) => {
  const { definitions } = deps.storage;
  const find = async (teamId: number, id: string) => {
    const definition = await definitions.getPropertyDefinition(teamId, id);
    if (!definition) throw notFound();
    return definition;
  };
  return new Elysia({ name: 'property-definitions', prefix: '/api/projects/:project_id/property_definitions', detail: { tags: ['property definitions'] } })
    .use(authPlugin(deps))
    .get(
      '/',
      async ({ principal, params, query, request }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        const page = parsePage(query);
        const asked = toPropertyQuery(query, page);
        const { count, results } = asked ? await definitions.listPropertyDefinitions(project.id, asked) : { count: 0, results: [] };
        return paginate(request.url, page, count, await toPropertyBodies(deps, results));
      },
      {
        auth: true,
        params: DefinitionParams,
        query: PropertyDefinitionListQuery,
        response: { 200: Envelope(PropertyDefinition), 400: ErrorBody, ...authErrors },
        detail: { summary: 'List property definitions (those seen on `event_names` first, then by name)' },
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
        const [body] = await toPropertyBodies(deps, [await find(project.id, params.id)]);
        return body;
      },
      { auth: true, params: DefinitionIdParams, response: { 200: PropertyDefinition, ...authErrors }, detail: { summary: 'Retrieve a property definition' } },
    )
    .patch(
      '/:id/',
      async ({ principal, params, body }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        const updated = await definitions.updatePropertyDefinition(project.id, params.id, toPropertyPatch(body), principal.user.id, deps.now());
        if (!updated) throw notFound();
        const [result] = await toPropertyBodies(deps, [updated]);
        return result;
      },
      {
        auth: true,
        params: DefinitionIdParams,
        body: PropertyDefinitionPatchBody,
        response: { 200: PropertyDefinition, 400: ErrorBody, ...authErrors },
        detail: { summary: 'Update description, tags or property_type' },
      },
    )
    .delete(
      '/:id/',
      refuseMethod(deps),
      { auth: true, params: DefinitionIdParams, response: { 405: ErrorBody, ...authErrors }, detail: { summary: 'Refused: definitions are not deleted' } },
    );
};
