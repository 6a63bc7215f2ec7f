import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import { authPlugin, resolveProject } from '../../http/auth';
import { ErrorBody, authErrors } from '../../http/schemas';
import { QueryBody, QueryParams, QueryResponse } from './model';
import { createQueryService } from './service';

/** PostHog's query endpoint (`/api/projects/:project_id/query/`), for HogQL statements. */
export const queryModule = (deps: Deps) => {
  const service = createQueryService(deps);
  return new Elysia({ name: 'query', prefix: '/api/projects/:project_id/query', detail: { tags: ['query'] } })
    .use(authPlugin(deps))
    .post(
      '/',
      async ({ principal, params, body }) => service.run((await resolveProject(deps, principal, params.project_id)).id, body),
      {
        auth: true,
        params: QueryParams,
        body: QueryBody,
        response: { 200: QueryResponse, 400: ErrorBody, ...authErrors, 503: ErrorBody, 504: ErrorBody },
        detail: {
          summary: 'Run a HogQL query',
          description:
            '`{"query": {"kind": "HogQLQuery", "query": "SELECT event, count() FROM events GROUP BY event", "values": {}}}`. ' +
            'Answers `{columns, types, results, hasMore, limit, offset}`; a query past QUERY_TIMEOUT_MS is a 504.',
        },
      },
    );
};
