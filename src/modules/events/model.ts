import { t } from 'elysia';

const Str = (description: string) => t.Optional(t.String({ description }));

export const EventsParams = t.Object({ project_id: t.String() });
export const EventParams = t.Object({ project_id: t.String(), id: t.String() });

export const EventsListQuery = t.Object({
  event: Str('Exact event name.'),
  distinct_id: Str('Exact distinct id.'),
  person_id: Str("A person's id or uuid: matches every distinct id of that person."),
  after: Str('Exclusive lower bound: ISO 8601 or relative (-7d, -24h, -1m, -30M).'),
  before: Str('Exclusive upper bound: ISO 8601 or relative (default now + 5 s).'),
  properties: Str('JSON: a list of property filters [{key, value, operator, type}] or a group {type: AND|OR, values}.'),
  limit: Str('Page size: 100 by default, at most 1000 (select: QUERY_MAX_ROWS); exports: every matching event unless given.'),
  offset: Str('Rows to skip (at most 50,000); prefer the next link.'),
  format: t.Optional(
    t.String({
      // Listed for the docs; checked by the handler, so an unknown one is PostHog's invalid_choice.
      enum: ['csv', 'json', 'ndjson', 'parquet'],
      description:
        'An export, streamed as an attachment of every matching event unless limit is given. json: the same envelope, results streamed; ' +
        'csv: the results as CSV (text/csv); ndjson: the json results, one object (select: one row array) a line (application/x-ndjson); ' +
        'parquet: a zstd Parquet file (application/vnd.apache.parquet) with columns id, distinct_id, event, elements_chain as strings, ' +
        'timestamp as TIMESTAMP (UTC) and properties as JSON text; with select, the selected columns with their own types, a selected ' +
        'property (properties.X, person.properties.X) by its definition: Numeric as DOUBLE, Boolean as BOOLEAN, DateTime as TIMESTAMP.',
    }),
  ),
  select: Str('JSON list of HogQL-style expressions, e.g. ["event", "count()", "properties.$browser"]; or one expression per repeated parameter.'),
  where: Str('JSON list of conditions (needs select), e.g. ["properties.$browser = \'Chrome\'"]; or one per repeated parameter.'),
  orderBy: Str('["-timestamp"] (default) or ["timestamp"]; with select, select entries prefixed with - for descending.'),
  cursor: Str('Keyset cursor of a next link (timestamp,uuid of the last row shown).'),
  action_id: Str('Events of an action (no actions exist here: always empty).'),
});

export const EventRetrieveQuery = t.Object({
  include_person: Str('true to include the person.'),
  format: Str('json (the default) or csv: a header row and the event\'s row, columns as an export names them.'),
});

export const EventValuesQuery = t.Object({
  key: Str('The property whose values to list; custom_event lists event names (not the built-in ones).'),
  value: Str('Case-insensitive substring the values must contain.'),
  event_name: t.Optional(t.Array(t.String(), { description: 'Only values of these events (repeatable).' })),
});

const Element = t.Object({
  event: t.Null(),
  text: t.Union([t.String(), t.Null()]),
  tag_name: t.Union([t.String(), t.Null()]),
  attr_class: t.Union([t.Array(t.String()), t.Null()]),
  href: t.Union([t.String(), t.Null()]),
  attr_id: t.Union([t.String(), t.Null()]),
  nth_child: t.Union([t.Integer(), t.Null()]),
  nth_of_type: t.Union([t.Integer(), t.Null()]),
  attributes: t.Record(t.String(), t.String()),
  order: t.Integer(),
});

const Person = t.Object({
  is_identified: t.Boolean(),
  distinct_ids: t.Array(t.String()),
  properties: t.Record(t.String(), t.Unknown()),
});

export const StoredEvent = t.Object(
  {
    id: t.String(),
    distinct_id: t.String(),
    properties: t.Record(t.String(), t.Unknown()),
    event: t.String(),
    timestamp: t.String({ description: 'ISO 8601, UTC.' }),
    person: t.Union([Person, t.Null()]),
    elements: t.Array(Element),
    elements_chain: t.String(),
  },
  { description: 'A stored event, as PostHog returns it.' },
);

const Link = t.Union([t.String(), t.Null()]);

export const EventsPage = t.Object({ count: t.Integer(), next: Link, previous: Link, results: t.Array(StoredEvent) });

export const SelectPage = t.Object(
  {
    columns: t.Array(t.String()),
    types: t.Array(t.String()),
    results: t.Array(t.Array(t.Unknown())),
    hasMore: t.Boolean(),
    next: Link,
    previous: Link,
  },
  { description: 'With select: the columns and their rows.' },
);

export const ValuesResponse = t.Array(t.Object({ name: t.String() }));
