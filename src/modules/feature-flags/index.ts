import { Elysia, t, type Static } from 'elysia';
import type { Deps } from '../../deps';
import { authPlugin, resolveProject, refuseMethod } from '../../http/auth';
import { paginate, parsePage } from '../../http/pagination';
import { Envelope, ErrorBody, PageQuery, authErrors } from '../../http/schemas';
import type { Principal, Project } from '../../storage';
import { etagOf, localEvaluationDefinitions, matchesEtag, projectForPoll } from './local-evaluation';
import {
  FeatureFlagResponse,
  FlagCreateBody,
  FlagParams,
  FlagUpdateBody,
  LocalEvaluationQuery,
  LocalEvaluationResponse,
  ProjectParams,
} from './model';
import { createFlag, findFlag, listFlags, loadCreators, remoteConfigPayload, toFlagResponse, updateFlag } from './service';

const BASE = '/api/projects/:project_id/feature_flags';

/** Answer a definitions poll: 304 while the body's ETag is the one the SDK already has. */
async function pollResponse(deps: Deps, project: Project, request: Request, sendCohorts: boolean) {
  const body = JSON.stringify(await localEvaluationDefinitions(deps, project, sendCohorts));
  const etag = etagOf(body);
  if (matchesEtag(request.headers.get('if-none-match'), etag)) return new Response(null, { status: 304, headers: { etag } });
  return new Response(body, { status: 200, headers: { 'content-type': 'application/json', etag } });
}

const pollDetail = (summary: string) => ({
  summary,
  description:
    'Flag definitions for server SDKs evaluating locally, with a personal API key (Bearer). `send_cohorts` adds the cohorts the flags use. ' +
    'Answers 304 when `If-None-Match` carries the current ETag.',
});

const pollResponses = { 200: LocalEvaluationResponse, 304: t.Void(), ...authErrors };

/** PATCH and PUT are the same partial update, as in PostHog. */
const updateHook = { auth: true, params: FlagParams, body: FlagUpdateBody, response: { 200: FeatureFlagResponse, 400: ErrorBody, ...authErrors } } as const;

/** PostHog's feature-flag management API (outside the spec), plus the local-evaluation polls. */
export const featureFlagsModule = (deps: Deps) => {
  const update = async ({ principal, params, body }: { principal: Principal; params: Static<typeof FlagParams>; body: Static<typeof FlagUpdateBody> }) =>
    updateFlag(deps, await resolveProject(deps, principal, params.project_id), params.id, body);
  return new Elysia({ name: 'feature-flags', detail: { tags: ['feature flags'] } })
    .use(authPlugin(deps))
    .get(
      `${BASE}/`,
      async ({ principal, params, query, request }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        const page = parsePage(query);
        const { count, results } = await listFlags(deps, project, page);
        return paginate(request.url, page, count, results);
      },
      { auth: true, params: ProjectParams, query: PageQuery, response: { 200: Envelope(FeatureFlagResponse), ...authErrors }, detail: { summary: 'List feature flags' } },
    )
    .post(
      `${BASE}/`,
      async ({ principal, params, body, set }) => {
        const project = await resolveProject(deps, principal, params.project_id);
        set.status = 201;
        return createFlag(deps, project, principal, body);
      },
      {
        auth: true,
        params: ProjectParams,
        body: FlagCreateBody,
        response: { 201: FeatureFlagResponse, 400: ErrorBody, ...authErrors },
        detail: { summary: 'Create a feature flag' },
      },
    )
    .get(
      `${BASE}/local_evaluation/`,
      async ({ principal, params, query, request }) =>
        pollResponse(deps, await resolveProject(deps, principal, params.project_id), request, query.send_cohorts !== undefined),
      { auth: true, params: ProjectParams, query: LocalEvaluationQuery, response: pollResponses, detail: pollDetail('Flag definitions for local evaluation') },
    )
    .get(
      `${BASE}/:id/`,
      async ({ principal, params }) => {
        const flag = await findFlag(deps, await resolveProject(deps, principal, params.project_id), params.id);
        return toFlagResponse(flag, await loadCreators(deps, [flag]));
      },
      { auth: true, params: FlagParams, response: { 200: FeatureFlagResponse, ...authErrors }, detail: { summary: 'Retrieve a feature flag' } },
    )
    .patch(`${BASE}/:id/`, update, { ...updateHook, detail: { summary: 'Update a feature flag (partial); `{"deleted": true}` soft-deletes it' } })
    .put(`${BASE}/:id/`, update, { ...updateHook, detail: { summary: 'Update a feature flag' } })
    .delete(
      `${BASE}/:id/`,
      refuseMethod(deps),
      { auth: true, params: FlagParams, response: { 405: ErrorBody, ...authErrors }, detail: { summary: 'Not allowed: soft-delete with PATCH {"deleted": true}' } },
    )
    .get(
      `${BASE}/:id/remote_config/`,
      async ({ principal, params }) => {
        const payload = await remoteConfigPayload(deps, await resolveProject(deps, principal, params.project_id), params.id);
        return new Response(JSON.stringify(payload), { headers: { 'content-type': 'application/json' } });
      },
      {
        auth: true,
        params: FlagParams,
        response: { 200: t.Unknown(), ...authErrors },
        detail: { summary: 'The `true` payload of a flag (by id or key), for `getRemoteConfigPayload`' },
      },
    )
    .get(
      '/api/feature_flag/local_evaluation/',
      async ({ principal, query, request }) =>
        pollResponse(deps, await projectForPoll(deps, principal, query.token), request, query.send_cohorts !== undefined),
      { auth: true, query: LocalEvaluationQuery, response: pollResponses, detail: pollDetail('Flag definitions for local evaluation (posthog-node 3/4)') },
    )
    .get(
      '/flags/definitions',
      async ({ principal, query, request }) =>
        pollResponse(deps, await projectForPoll(deps, principal, query.token), request, query.send_cohorts !== undefined),
      { auth: true, query: LocalEvaluationQuery, response: pollResponses, detail: pollDetail('Flag definitions for local evaluation (posthog-node 5)') },
    );
};
