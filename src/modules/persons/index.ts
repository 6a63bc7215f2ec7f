import { Elysia, t } from 'elysia';
import { personFilter } from '../../core/persons/person-filter';
import type { Deps } from '../../deps';
import { authPlugin, resolveProject } from '../../http/auth';
import { paginate, parsePage } from '../../http/pagination';
import { authErrors, Envelope, ErrorBody } from '../../http/schemas';
import { Person, PersonDeleteQuery, PersonIdParams, PersonPatchBody, PersonsParams, PersonsQuery } from './model';
import { deletePerson, findPerson, loadPersons, toPersonBody, wantsEvents } from './service';

/** Persons of a project (`/api/projects/:project_id/persons/`): list, retrieve, property updates, deletion. */
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
    .delete(
      '/:id/',
      async ({ principal, params, query, set }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        await deletePerson(deps, project.id, await findPerson(deps, project.id, params.id), wantsEvents(query.delete_events));
        // PostHog answers 202 (it queues the events' deletion); here everything is gone by now.
        set.status = 202;
      },
      {
        auth: true,
        params: PersonIdParams,
        query: PersonDeleteQuery,
        response: { 202: t.Void(), 400: ErrorBody, 503: ErrorBody, ...authErrors },
        detail: {
          summary: 'Delete a person and their distinct ids; with `delete_events`, also every event of theirs',
          description:
            'Answers once done: the person, their distinct ids, cohort memberships and flag hash keys are gone, and with `delete_events` every event with one of their distinct ids or their person id, whether it was still in the log, in the hot table, in Parquet files or in person-clustered copies (those files are written again without the rows), or in the ClickHouse events table (EVENTS_STORE: deleted by a mutation, answered once applied; a 400 on a cluster node). 503 with Retry-After when the log is too far behind to wait for, before anything is deleted.',
        },
      },
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
