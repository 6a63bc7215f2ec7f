import { t } from 'elysia';

export const QueryParams = t.Object({ project_id: t.String() });

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) => t.Union([schema, t.Null()]);

const HogQLQuery = t.Object(
  {
    kind: t.Literal('HogQLQuery'),
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

const ExpressionList = (description: string) => t.Optional(Nullable(t.Array(t.String(), { description })));

const EventsQuery = t.Object(
  {
    kind: t.Literal('EventsQuery'),
    select: t.Array(t.String(), {
      description:
        'Columns: HogQL expressions over events (a trailing `-- label` is ignored), or `*` (the event as an object), `person` ' +
        '(the person as an object) and `person_display_name` (`{display_name, id, distinct_id}`). Empty: `*`.',
    }),
    where: ExpressionList('HogQL conditions, ANDed; those with aggregates filter the groups (HAVING).'),
    orderBy: ExpressionList('`expression [ASC|DESC]` entries. Default: count() DESC, else the first aggregate DESC, else timestamp DESC, else the first column.'),
    event: t.Optional(Nullable(t.String({ description: 'Only events of this name.' }))),
    events: t.Optional(Nullable(t.Array(t.String(), { description: 'Only events of these names (with `event`).' }))),
    properties: t.Optional(t.Unknown({ description: "PostHog's property filters, as the events list takes them." })),
    fixedProperties: t.Optional(t.Unknown({ description: 'More property filters, ANDed.' })),
    after: t.Optional(Nullable(t.String({ description: 'Events after this time (ISO 8601 or relative, e.g. -7d); default -24h; `all`: no lower bound.' }))),
    before: t.Optional(Nullable(t.String({ description: 'Events before this time; default now + 5 s.' }))),
    limit: t.Optional(Nullable(t.Integer({ minimum: 0, description: 'Rows to return (100 without one), capped at QUERY_MAX_ROWS.' }))),
    offset: t.Optional(Nullable(t.Integer({ minimum: 0 }))),
    personId: t.Optional(Nullable(t.String({ description: "Only this person's events (id or uuid): every distinct id of theirs." }))),
    filterTestAccounts: t.Optional(Nullable(t.Boolean({ description: "Apply the project's test account filters." }))),
    actionId: t.Optional(Nullable(t.Integer({ description: 'Actions are not kept here: no event matches one (as the events list).' }))),
  },
  { description: "PostHog's EventsQuery (what its events table sends)." },
);

export const QueryBody = t.Object({
  query: t.Union([HogQLQuery, EventsQuery]),
  client_query_id: t.Optional(t.String()),
  refresh: t.Optional(t.Union([t.Boolean(), t.String()], { description: 'Accepted for PostHog clients; every query runs now (nothing is cached).' })),
});

export const QueryResponse = t.Union([
  t.Object(
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
  ),
  t.Object(
    {
      columns: t.Array(t.String()),
      types: t.Array(t.String(), { description: 'ClickHouse-style type of each column.' }),
      results: t.Array(t.Array(t.Unknown())),
      hasMore: t.Boolean(),
      limit: t.Integer(),
      offset: t.Integer(),
      hogql: t.String({ description: 'The query run, as HogQL.' }),
      is_cached: t.Boolean(),
    },
    { description: "PostHog's EventsQueryResponse." },
  ),
]);
