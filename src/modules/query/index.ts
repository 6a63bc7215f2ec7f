import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import { authPlugin, resolveProject } from '../../http/auth';
import { ErrorBody, authErrors } from '../../http/schemas';
import { AppError } from '../../errors';
import { QueryBody, QueryParams, QueryResponse } from './model';
import { createQueryService } from './service';

/** PostHog's query endpoint (`/api/projects/:project_id/query/`), for HogQL statements. */
export const queryModule = (deps: Deps) => {
  const service = createQueryService(deps);
  return new Elysia({ name: 'query', prefix: '/api/projects/:project_id/query', detail: { tags: ['query'] } })
    .use(authPlugin(deps))
    .post(
      '/',
      async ({ principal, params, body }) => service.run(await resolveProject(deps, principal, params.project_id), body),
      {
        auth: true,
        // Before validation: a kind not answered here is named as such, not as a mismatch of every kind that is.
        transform: ({ body }) => checkKind(body),
        params: QueryParams,
        body: QueryBody,
        response: { 200: QueryResponse, 400: ErrorBody, ...authErrors, 503: ErrorBody, 504: ErrorBody },
        detail: {
          summary: 'Run a HogQL query or an EventsQuery',
          description:
            '`{"query": {"kind": "HogQLQuery", "query": "SELECT event, count() FROM events GROUP BY event", "values": {}}}`, or ' +
            '`{"query": {"kind": "EventsQuery", "select": ["*", "event", "timestamp"], "orderBy": ["timestamp DESC"], "after": "-7d"}}`. ' +
            'Answers `{columns, types, results, hasMore, limit, offset, hogql}` (types `[column, type]` pairs for HogQL, type names for EventsQuery); ' +
            'a query past QUERY_TIMEOUT_MS is a 504.',
        },
      },
    );
};

const KINDS = new Set(['HogQLQuery', 'EventsQuery']);

function checkKind(body: unknown): void {
  const query = body && typeof body === 'object' ? (body as { query?: unknown }).query : undefined;
  const kind = query && typeof query === 'object' ? (query as { kind?: unknown }).kind : undefined;
  if (typeof kind === 'string' && !KINDS.has(kind)) throw new AppError('invalid_input', `Unsupported query kind: ${kind.slice(0, 100)}`, 'kind');
}
