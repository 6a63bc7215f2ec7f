import { t } from 'elysia';

export const QueryParams = t.Object({ project_id: t.String() });

const HogQLQuery = t.Object(
  {
    kind: t.String({ description: 'HogQLQuery (the only kind answered here).' }),
    query: t.String({
      description:
        'A SELECT over `events` (fields as the events select has them, and the event\'s person: `person.properties.X`, ' +
        '`person.id`, `person.created_at`, `person.is_identified`) or over `persons` (`id`, `created_at`, `properties.X`, ' +
        '`is_identified`, `pdi.distinct_id`: one row per distinct id): WHERE, GROUP BY, HAVING, ORDER BY, LIMIT/OFFSET, ' +
        'the functions of the events select, `{name}` placeholders. No subqueries, JOINs or UNIONs.',
    }),
    values: t.Optional(
      t.Record(t.String(), t.Unknown(), { description: 'Values of the `{name}` placeholders: strings, numbers, booleans, null, or lists of them (after IN). Always bound, never spliced.' }),
    ),
  },
  { description: "PostHog's HogQLQuery." },
);

export const QueryBody = t.Object({
  query: HogQLQuery,
  client_query_id: t.Optional(t.String()),
  refresh: t.Optional(t.Union([t.Boolean(), t.String()], { description: 'Accepted for PostHog clients; every query runs now (nothing is cached).' })),
});

export const QueryResponse = t.Object(
  {
    columns: t.Array(t.String()),
    types: t.Array(t.Tuple([t.String(), t.String()]), { description: '[column, ClickHouse-style type] of each column.' }),
    results: t.Array(t.Array(t.Unknown())),
    hasMore: t.Boolean(),
    limit: t.Integer({ description: "The query's LIMIT (100 without one), capped at QUERY_MAX_ROWS." }),
    offset: t.Integer(),
    hogql: t.String({ description: 'The query as run.' }),
    is_cached: t.Boolean(),
  },
  { description: "PostHog's HogQLQueryResponse." },
);
