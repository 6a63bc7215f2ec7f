import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { authPlugin, resolveProject, refuseMethod } from '../../http/auth';
import { paginate, parsePage } from '../../http/pagination';
import { Envelope, ErrorBody, PageQuery, authErrors } from '../../http/schemas';
import {
  AddPersonsBody,
  Cohort,
  CohortBody,
  CohortIdParams,
  CohortParams,
  CohortPerson,
  CohortPersonsQuery,
  RemovePersonBody,
  Success,
} from './model';
import { cohortPersonsCsv, cohortPersonsPage } from './persons';
import { createCohort, findCohort, toCohortBodies, toCohortBody, updateCohort } from './service';

const invalid = (detail: string, attr: string | null = null) => new AppError('invalid_input', detail, attr);

/** Cohorts of a project and their members (`/api/projects/:project_id/cohorts/`). */
export const cohortsModule = (deps: Deps) => {
  const { cohorts } = deps.storage;
  const target = async (principal: Parameters<typeof resolveProject>[1], params: { project_id: string; id: string }) => {
    const project = await resolveProject(deps, principal, params.project_id);
    return { project, cohort: await findCohort(deps, project.id, params.id) };
  };
  return new Elysia({ name: 'cohorts', prefix: '/api/projects/:project_id/cohorts', detail: { tags: ['cohorts'] } })
    .use(authPlugin(deps))
    .get(
      '/',
      async ({ principal, params, query, request }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        const page = parsePage(query);
        const { count, results } = await cohorts.listCohorts(project.id, page);
        return paginate(request.url, page, count, await toCohortBodies(deps, results));
      },
      { auth: true, params: CohortParams, query: PageQuery, response: { 200: Envelope(Cohort), ...authErrors }, detail: { summary: 'List live cohorts, newest first' } },
    )
    .post(
      '/',
      async ({ principal, params, body, set }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        const cohort = await createCohort(deps, principal, project.id, body);
        set.status = 201;
        return toCohortBody(deps, cohort);
      },
      {
        auth: true,
        params: CohortParams,
        body: CohortBody,
        response: { 201: Cohort, 400: ErrorBody, ...authErrors },
        detail: { summary: 'Create a cohort (JSON, or multipart with a csv file for a static cohort)' },
      },
    )
    .get('/:id/', async ({ principal, params }) => toCohortBody(deps, (await target(principal, params)).cohort), {
      auth: true,
      params: CohortIdParams,
      response: { 200: Cohort, ...authErrors },
      detail: { summary: 'Retrieve a cohort (deleted ones too)' },
    })
    .patch(
      '/:id/',
      async ({ principal, params, body }) => toCohortBody(deps, await updateCohort(deps, (await target(principal, params)).cohort, body)),
      {
        auth: true,
        params: CohortIdParams,
        body: CohortBody,
        response: { 200: Cohort, 400: ErrorBody, ...authErrors },
        detail: { summary: 'Update a cohort; `deleted: true` removes it from the list' },
      },
    )
    .delete(
      '/:id/',
      refuseMethod(deps),
      { auth: true, params: CohortIdParams, response: { 405: ErrorBody, ...authErrors }, detail: { summary: 'Refused: PATCH `deleted: true` instead' } },
    )
    .get(
      '/:id/persons/',
      async ({ principal, params, query, request }) => {
        const { project, cohort } = await target(principal, params);
        const page = parsePage(query);
        if (query.format !== 'csv') return cohortPersonsPage(deps, project, cohort.id, page, request.url);
        const paged = query.limit !== undefined || query.offset !== undefined;
        // A Response passes through Elysia as is; the 200 schema documents the JSON form.
        return (await cohortPersonsCsv(deps, project, cohort.id, paged ? page : null)) as never;
      },
      {
        auth: true,
        params: CohortIdParams,
        query: CohortPersonsQuery,
        response: { 200: Envelope(CohortPerson), ...authErrors },
        detail: { summary: 'Members of a cohort (format=csv: a text/csv download with flattened properties)' },
      },
    )
    .patch(
      '/:id/add_persons_to_static_cohort/',
      async ({ principal, params, body }) => {
        const { project, cohort } = await target(principal, params);
        if (!cohort.isStatic) throw invalid('Can only add users to static cohorts');
        if (!body.person_ids.length) throw invalid('person_ids cannot be empty', 'person_ids');
        const added = await cohorts.addStaticPersons(project.id, cohort.id, 'person_id', body.person_ids, deps.now());
        if (!added) throw invalid('No valid users to add to cohort', 'person_ids');
        return { success: true };
      },
      {
        auth: true,
        params: CohortIdParams,
        body: AddPersonsBody,
        response: { 200: Success, 400: ErrorBody, ...authErrors },
        detail: { summary: 'Add persons to a static cohort' },
      },
    )
    .patch(
      '/:id/remove_person_from_static_cohort/',
      async ({ principal, params, body }) => {
        const { project, cohort } = await target(principal, params);
        if (!cohort.isStatic) throw invalid('Can only remove users from static cohorts');
        if (!(await cohorts.removeStaticPerson(project.id, cohort.id, body.person_id, deps.now()))) {
          throw new AppError('not_found', 'Person is not part of the cohort');
        }
        return { success: true };
      },
      {
        auth: true,
        params: CohortIdParams,
        body: RemovePersonBody,
        response: { 200: Success, 400: ErrorBody, ...authErrors },
        detail: { summary: 'Remove a person from a static cohort' },
      },
    );
};
