/**
 * One table of EventsQuery cases, used three ways as statement-cases.ts: the exact statement (or
 * the exact 400), the answer on the fixture of duckdb-fixture.ts (also over team 1's rows alone),
 * and the `probe` cases refused or run safely inside team 1. `rows` are the statement's columns,
 * as storage returns them: the answer's objects (`*`, `person`) are put together by the caller.
 */
import type { EventsQueryContext, EventsQueryInput, QueryParam } from '../../../src/core/query';

export interface EventsQueryCase {
  name: string;
  input: EventsQueryInput;
  context?: Partial<EventsQueryContext>;
  /** The assembled statement for team 1 (LIMIT 100, or the query's). */
  sql?: { sql: string; params: QueryParam[] };
  columns?: string[];
  types?: string[];
  hogql?: string;
  rows?: unknown[][];
  error?: { attr: string; detail: string };
  probe?: true;
}

/** The bounds the fixture's NOW (2024-01-10 12:00) gives: after -7d, before now + 5 s. */
const WEEK = '2024-01-03 12:00:00.000000';
const BEFORE = '2024-01-10 12:00:05.000000';
const refused = (attr: string, detail: string) => ({ attr, detail });

const UI_SELECT = ['*', 'event', 'person_display_name -- Person', 'coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen', 'properties.$lib', 'timestamp'];

const CASES: EventsQueryCase[] = [
  {
    name: "the events table of PostHog's UI",
    input: { select: UI_SELECT, orderBy: ['timestamp DESC'], after: '-7d' },
    sql: {
      sql:
        'SELECT uuid AS c0, event AS c1, properties AS c2, timestamp AS c3, distinct_id AS c4, elements_chain AS c5, created_at AS c6, event AS c7, ' +
        'coalesce(json_extract_string(person_properties, ?), json_extract_string(person_properties, ?), json_extract_string(person_properties, ?), distinct_id) AS c8, ' +
        'distinct_id AS c9, coalesce(mat_current_url, json_extract_string(properties, ?)) AS c10, json_extract_string(properties, ?) AS c11, timestamp AS c12 ' +
        'FROM events WHERE team_id = ? AND (timestamp > CAST(? AS TIMESTAMP)) AND (timestamp < CAST(? AS TIMESTAMP)) ORDER BY c3 DESC LIMIT ? OFFSET ?',
      params: ['/email', '/name', '/username', '/$screen_name', '/$lib', 1, WEEK, BEFORE, 100, 0],
    },
    columns: UI_SELECT,
    types: [
      "Tuple(String, String, String, DateTime64(6, 'UTC'), String, String, DateTime64(6, 'UTC'))",
      'String', 'Tuple(String, String)', 'Nullable(String)', 'Nullable(String)', "DateTime64(6, 'UTC')",
    ],
    hogql:
      'SELECT uuid, event, properties, timestamp, distinct_id, elements_chain, created_at, event, coalesce(person.properties.email, person.properties.name, ' +
      'person.properties.username, distinct_id), distinct_id, coalesce(properties.$current_url, properties.$screen_name), properties.$lib, timestamp ' +
      `FROM events WHERE timestamp > '${WEEK}' AND timestamp < '${BEFORE}' ORDER BY timestamp DESC LIMIT 100`,
  },
  {
    name: 'the UI query on the fixture: the display name falls back to the distinct id',
    input: { select: ['uuid', 'person_display_name -- Person', 'coalesce(properties.$current_url, properties.$screen_name) -- Url / Screen'], orderBy: ['timestamp DESC'], after: '-7d' },
    rows: [
      ['e6', 'ann@x.com', 'u1', null],
      ['e5', 'u3', 'u3', 'https://example.com/b?x=1'],
      ['e4', 'u3', 'u3', 'https://example.com/checkout'],
      ['e3', 'ann@x.com', 'u1', null],
      ['e2', 'bob@y.com', 'u2', null],
    ],
  },
  {
    name: 'an aggregate: GROUP BY the other columns, its where entry in HAVING, count() DESC first',
    input: { select: ['event', 'count()'], where: ['count() > 1'], after: 'all' },
    sql: {
      sql: 'SELECT event AS c0, count(*) AS c1 FROM events WHERE team_id = ? AND (timestamp < CAST(? AS TIMESTAMP)) GROUP BY c0 HAVING (count(*) > ?) ORDER BY c1 DESC LIMIT ? OFFSET ?',
      params: [1, BEFORE, 1, 100, 0],
    },
    types: ['String', 'UInt64'],
    hogql: `SELECT event, count() FROM events WHERE timestamp < '${BEFORE}' GROUP BY event HAVING count() > 1 ORDER BY count() DESC LIMIT 100`,
    rows: [['$pageview', 4]],
  },
  {
    name: 'event, properties and where entries, labels ignored',
    input: { select: ['uuid -- Id'], event: '$pageview', properties: [{ key: '$browser', value: 'Chrome', type: 'event' }], where: ["distinct_id = 'u1' -- only u1"], after: 'all' },
    sql: {
      sql:
        'SELECT uuid AS c0 FROM events WHERE team_id = ? AND (distinct_id = ?) AND (timestamp < CAST(? AS TIMESTAMP)) AND (mat_browser = ?) AND (event = ?) ' +
        'ORDER BY c0 ASC LIMIT ? OFFSET ?',
      params: [1, 'u1', BEFORE, 'Chrome', '$pageview', 100, 0],
    },
    columns: ['uuid -- Id'],
    rows: [['e1'], ['e6']],
  },
  {
    name: "ordered by the UI's Person column",
    input: { select: ['person_display_name -- Person'], where: ["event = '$pageview'"], orderBy: ['person_display_name -- Person DESC'], after: 'all' },
    rows: [['u3', 'u3'], ['bob@y.com', 'u2'], ['ann@x.com', 'u1'], ['ann@x.com', 'u1']],
  },
  { name: 'events: several names', input: { select: ['uuid'], events: ['signup', 'purchase'], after: 'all', orderBy: ['uuid'] }, rows: [['e3'], ['e4']] },
  { name: "personId: that person's distinct ids", input: { select: ['uuid', 'timestamp'], after: 'all' }, context: { personDistinctIds: ['u2', 'u3'] }, rows: [['e5', '2024-01-10T11:59:00.000Z'], ['e4', '2024-01-09T23:59:59.500Z'], ['e2', '2024-01-05T12:00:00.000Z']] },
  { name: 'personId of no person: nothing', input: { select: ['uuid'], after: 'all' }, context: { personDistinctIds: [] }, rows: [] },
  { name: 'actionId: nothing (no actions are kept)', input: { select: ['uuid'], after: 'all', actionId: 3 }, rows: [] },
  {
    name: 'ORDER BY a position counts columns as sent',
    input: { select: ['*', 'distinct_id', 'count()'], after: 'all', orderBy: ['3 DESC', '2'] },
    sql: {
      sql:
        'SELECT uuid AS c0, event AS c1, properties AS c2, timestamp AS c3, distinct_id AS c4, elements_chain AS c5, created_at AS c6, distinct_id AS c7, count(*) AS c8 ' +
        'FROM events WHERE team_id = ? AND (timestamp < CAST(? AS TIMESTAMP)) GROUP BY c0, c1, c2, c3, c4, c5, c6 ORDER BY c8 DESC, c4 ASC LIMIT ? OFFSET ?',
      params: [1, BEFORE, 100, 0],
    },
  },
  { name: 'test accounts filtered', input: { select: ['uuid'], after: 'all', filterTestAccounts: true, orderBy: ['uuid'] }, context: { testAccountFilters: [{ key: 'email', value: 'ann@x.com', operator: 'is_not', type: 'person' }] }, rows: [['e2'], ['e4'], ['e5']] },
  { name: 'limit and offset', input: { select: ['uuid'], after: 'all', orderBy: ['timestamp'], limit: 2, offset: 1 }, rows: [['e2'], ['e3']] },

  { name: 'a select error names its entry', input: { select: ['event', 'event ='] }, error: refused('select', 'Unexpected end of expression at position 7 of select[1]') },
  { name: 'a where error names its entry', input: { select: ['event'], where: ["event = 'x'", 'count(('] }, error: refused('where', 'Unexpected end of expression at position 7 of where[1]') },
  { name: 'an orderBy error names its entry', input: { select: ['event'], orderBy: ['nope() DESC'] }, error: refused('orderBy', "Unknown function 'nope' at position 0 of orderBy[0]") },
  { name: 'ORDER BY a position past the columns', input: { select: ['*', 'event'], orderBy: ['3'] }, error: refused('orderBy', 'ORDER BY position 3 is not in the select list at position 0 of orderBy[0]') },
  { name: 'a column neither grouped nor aggregated in ORDER BY', input: { select: ['event', 'count()'], orderBy: ['timestamp'] }, error: refused('orderBy', 'Expression must be in GROUP BY or inside an aggregate function at position 0 of orderBy[0]') },
  { name: 'select not a list', input: { select: 'event' }, error: refused('select', 'select must be a list of strings') },
  { name: 'a bad after', input: { select: ['event'], after: 'yesterday' }, error: refused('after', "Invalid date 'yesterday': use ISO 8601 or a relative date such as -7d, -24h or -1m") },
  { name: 'a negative limit', input: { select: ['event'], limit: -1 }, error: refused('limit', 'limit must be a whole number') },
  { name: 'a block comment', input: { select: ['event /* x */'] }, error: refused('select', 'Comments are not allowed at position 6 of select[0]') },
];

const PROBES: EventsQueryCase[] = [
  { name: 'team_id in where', input: { select: ['uuid'], where: ['1 = 1 OR team_id = 2'] }, error: refused('where', "Unknown field 'team_id' at position 9 of where[0]") },
  { name: 'a DuckDB function', input: { select: ["read_text('/etc/passwd')"] }, error: refused('select', "Unknown function 'read_text' at position 0 of select[0]") },
  { name: 'a second statement in orderBy', input: { select: ['uuid'], orderBy: ['timestamp; DROP TABLE events'] }, error: refused('orderBy', "Unexpected character ';' at position 9 of orderBy[0]") },
  { name: 'a subquery in where', input: { select: ['uuid'], where: ['uuid IN (SELECT uuid FROM events)'] }, error: refused('where', "Unsupported keyword 'SELECT' at position 9 of where[0]") },
  { name: 'a comment hides only its own line', input: { select: ['uuid'], where: ["event = 'signup' -- OR 1 = 1"], after: 'all' }, rows: [['e3']] },
  { name: 'a comment cannot end the team scope', input: { select: ['uuid'], where: ['1 = 1 --\nOR team_id = 2'] }, error: refused('where', "Unknown field 'team_id' at position 12 of where[0]") },
  { name: 'OR widens only its entry', input: { select: ['uuid'], where: ["event = 'x' OR 1 = 1"], after: 'all', orderBy: ['uuid'] }, rows: [['e1'], ['e2'], ['e3'], ['e4'], ['e5'], ['e6']] },
  { name: 'SQL in the event name', input: { select: ['uuid'], event: "' OR 1=1 --", after: 'all' }, rows: [] },
  { name: 'SQL in personId distinct ids', input: { select: ['uuid'], after: 'all' }, context: { personDistinctIds: ["u1') OR ('1' = '1"] }, rows: [] },
  { name: 'SQL in a display name property', input: { select: ['person_display_name'], after: 'all', event: 'signup' }, context: { displayNameProperties: ["email') OR ('1"] }, rows: [['u1', 'u1']] },
];

export const EVENTS_QUERY_CASES: EventsQueryCase[] = [...CASES, ...PROBES.map((c): EventsQueryCase => ({ ...c, probe: true }))];
