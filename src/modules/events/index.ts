import { Elysia, t } from 'elysia';
import type { Deps } from '../../deps';
import { authPlugin, refuseMethod, resolveProject } from '../../http/auth';
import { ErrorBody, authErrors } from '../../http/schemas';
import { EventParams, EventRetrieveQuery, EventValuesQuery, EventsListQuery, EventsPage, EventsParams, SelectPage, StoredEvent, ValuesResponse } from './model';
import { eventCsv } from './event-object';
import { parseFormat } from './params';
import { createEventsService } from './service';

const errors = { 400: ErrorBody, ...authErrors, 405: ErrorBody, 504: ErrorBody };

/**
 * Stored events of a project (`/api/projects/:project_id/events/`), read-only: the list (with
 * filters, `select`/`where`, csv/json export), one event, and property values.
 */
export const eventsModule = (deps: Deps) => {
  const events = createEventsService(deps);
  const project = (principal: Parameters<typeof resolveProject>[1], id: string) => resolveProject(deps, principal, id);
  const refuse = refuseMethod(deps);
  // Read-only, as in PostHog: writes are a 405 (after authentication, as DRF orders it).
  const refused = { auth: true, response: { 405: ErrorBody, ...authErrors }, detail: { hide: true } } as const;
  return new Elysia({ name: 'events', prefix: '/api/projects/:project_id/events', detail: { tags: ['events'] } })
    .use(authPlugin(deps))
    .get(
      '/',
      async ({ principal, params, query, request }) => {
        const result = await events.list((await project(principal, params.project_id)).id, query, request.url);
        // An export is a streamed Response, which Elysia sends as is. A page is sent as a
        // Response too: validating and encoding 100 events against the response schema was a
        // large part of the main thread's work a request (see bench/NOTES.md); the schema stays
        // for the docs, and the bodies are asserted whole by the API tests.
        if (result instanceof Response) return result as unknown as Exclude<typeof result, Response>;
        return new Response(JSON.stringify(result), { headers: { 'content-type': 'application/json' } }) as unknown as Exclude<typeof result, Response>;
      },
      {
        auth: true,
        params: EventsParams,
        query: EventsListQuery,
        response: { 200: t.Union([EventsPage, SelectPage]), ...errors },
        detail: {
          summary: 'List events (newest first), run a select, or export (format=csv|json|ndjson|parquet)',
          description:
            'Without select: the pagination envelope of stored events; `next` keeps the filters, freezes `before` and carries a keyset `cursor`. ' +
            'With select (and where): `{columns, types, results, hasMore, next, previous}`. With format=json: the same envelope, its results streamed ' +
            '(every matching row unless `limit`); with format=csv: the results as a streamed CSV file; with format=ndjson: one JSON object (select: row) a line; ' +
            'with format=parquet: a zstd Parquet file written by DuckDB (timestamps typed, properties as JSON text; select: its columns and types, selected properties typed by their definitions).',
        },
      },
    )
    .get(
      '/values/',
      async ({ principal, params, query }) => events.values((await project(principal, params.project_id)).id, query),
      { auth: true, params: EventsParams, query: EventValuesQuery, response: { 200: ValuesResponse, ...errors }, detail: { summary: 'Distinct values of a property (most frequent first)' } },
    )
    .get(
      '/:id/',
      async ({ principal, params, query }) => {
        const format = parseFormat(query.format, ['csv', 'json']);
        const event = await events.retrieve((await project(principal, params.project_id)).id, params.id, query.include_person === 'true');
        if (format !== 'csv') return event;
        const headers = { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="event-${event.id}.csv"` };
        return new Response(eventCsv(event), { headers }) as unknown as typeof event;
      },
      {
        auth: true,
        params: EventParams,
        query: EventRetrieveQuery,
        response: { 200: StoredEvent, ...errors },
        detail: { summary: 'Retrieve one event by its uuid (format=csv: as CSV)' },
      },
    )
    .post('/', refuse, refused)
    .put('/', refuse, refused)
    .patch('/', refuse, refused)
    .delete('/', refuse, refused)
    .post('/:id/', refuse, refused)
    .put('/:id/', refuse, refused)
    .patch('/:id/', refuse, refused)
    .delete('/:id/', refuse, refused);
};
