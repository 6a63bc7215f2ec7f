import { Elysia } from 'elysia';
import { personFilter } from '../../core/persons/person-filter';
import type { Deps } from '../../deps';
import { authPlugin, resolveProject } from '../../http/auth';
import { paginate, parsePage } from '../../http/pagination';
import { authErrors, Envelope, ErrorBody } from '../../http/schemas';
import { Person, PersonIdParams, PersonPatchBody, PersonsParams, PersonsQuery } from './model';
import { findPerson, loadPersons, toPersonBody } from './service';

/** Persons of a project (`/api/projects/:project_id/persons/`): list, retrieve, property updates. */
export const personsModule = (deps: Deps) => {
  const { persons } = deps.storage;
  return new Elysia({ name: 'persons', prefix: '/api/projects/:project_id/persons', detail: { tags: ['persons'] } })
    .use(authPlugin(deps))
    .get(
      '/',
      async ({ principal, params, query, request }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        const page = parsePage(query);
        const where = personFilter(query, deps.now());
        await loadPersons(deps, project.id);
        const { count, results } = persons.listPersons(project.id, where, page);
        return paginate(request.url, page, count, results.map((p) => toPersonBody(project, p)));
      },
      {
        auth: true,
        params: PersonsParams,
        query: PersonsQuery,
        response: { 200: Envelope(Person), 400: ErrorBody, ...authErrors },
        detail: { summary: 'List persons, newest first (search, distinct_id and person property filters)' },
      },
    )
    .get(
      '/:id/',
      async ({ principal, params }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        return toPersonBody(project, await findPerson(deps, project.id, params.id));
      },
      { auth: true, params: PersonIdParams, response: { 200: Person, ...authErrors }, detail: { summary: 'Retrieve a person by id or uuid' } },
    )
    .patch(
      '/:id/',
      async ({ principal, params, body }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        const person = await findPerson(deps, project.id, params.id);
        const updated = body.properties ? persons.setProperties(project.id, person.uuid, body.properties) : person;
        return toPersonBody(project, updated ?? person);
      },
      {
        auth: true,
        params: PersonIdParams,
        body: PersonPatchBody,
        response: { 200: Person, 400: ErrorBody, ...authErrors },
        detail: { summary: "Merge `properties` into a person's properties" },
      },
    );
};
