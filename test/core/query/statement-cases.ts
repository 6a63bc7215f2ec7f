/**
 * One table of HogQL statement cases (the query endpoint), used three ways like cases.ts:
 * the exact statement (or the exact 400), the answer on the fixture of duckdb-fixture.ts (also run
 * over team 1's rows alone), and the `probe` cases refused or run safely inside team 1.
 */
import type { QueryParam } from '../../../src/core/query';
import { FIXTURE_PERSONS } from './cases';

export interface StatementCase {
  name: string;
  query: string;
  values?: unknown;
  /** The assembled statement for team 1 (LIMIT the query's, else 100). */
  sql?: { sql: string; params: QueryParam[] };
  columns?: string[];
  types?: string[];
  rows?: unknown[][];
  error?: { attr: string; detail: string };
  probe?: true;
}

const at = (pos: number) => `at position ${pos} of query`;
const refused = (detail: string, attr = 'query') => ({ attr, detail });

const CASES: StatementCase[] = [
  {
    name: 'count by event, ordered by an alias',
    query: 'SELECT event, count() AS c FROM events GROUP BY event ORDER BY c DESC, event',
    sql: {
      sql: 'SELECT event AS c0, count(*) AS c1 FROM events WHERE team_id = ? GROUP BY c0 ORDER BY c1 DESC, c0 ASC LIMIT ? OFFSET ?',
      params: [1, 100, 0],
    },
    columns: ['event', 'c'],
    types: ['String', 'UInt64'],
    rows: [['$pageview', 5], ['purchase', 1], ['signup', 1]],
  },
  {
    name: 'SELECT * with a table alias',
    query: "SELECT * FROM events e WHERE e.event = 'purchase'",
    sql: {
      sql: 'SELECT uuid AS c0, event AS c1, properties AS c2, timestamp AS c3, distinct_id AS c4, elements_chain AS c5, created_at AS c6 FROM events WHERE team_id = ? AND (event = ?) LIMIT ? OFFSET ?',
      params: [1, 'purchase', 100, 0],
    },
    columns: ['uuid', 'event', 'properties', 'timestamp', 'distinct_id', 'elements_chain', 'created_at'],
    rows: [['e4', 'purchase', '{"price":100,"$current_url":"https://example.com/checkout","signup_date":"2024-01-09T10:00:00+02:00","pct":"50 percent"}', '2024-01-09T23:59:59.500Z', 'u3', '', '2024-01-09T23:59:59.500Z']],
  },
  {
    name: 'placeholders are bound values',
    query: 'SELECT uuid FROM events WHERE distinct_id = {who} AND timestamp >= {since} ORDER BY timestamp',
    values: { who: 'u1', since: '2024-01-08' },
    sql: {
      sql: 'SELECT uuid AS c0 FROM events WHERE team_id = ? AND (distinct_id = ? AND timestamp >= CAST(? AS TIMESTAMP)) ORDER BY timestamp ASC LIMIT ? OFFSET ?',
      params: [1, 'u1', '2024-01-08 00:00:00.000000', 100, 0],
    },
    rows: [['e3'], ['e6'], ['e7']],
  },
  {
    name: 'a list placeholder after IN',
    query: 'SELECT uuid FROM events WHERE event IN {names} ORDER BY uuid',
    values: { names: ['signup', 'purchase'] },
    sql: { sql: 'SELECT uuid AS c0 FROM events WHERE team_id = ? AND (event IN (?, ?)) ORDER BY c0 ASC LIMIT ? OFFSET ?', params: [1, 'signup', 'purchase', 100, 0] },
    rows: [['e3'], ['e4']],
  },
  {
    name: 'HAVING, GROUP BY an alias, ORDER BY a position',
    query: 'SELECT properties.$browser AS b, count() FROM events GROUP BY b HAVING count() > 1 ORDER BY 2 DESC',
    sql: {
      sql: 'SELECT mat_browser AS c0, count(*) AS c1 FROM events WHERE team_id = ? GROUP BY c0 HAVING (count(*) > ?) ORDER BY c1 DESC LIMIT ? OFFSET ?',
      params: [1, 1, 100, 0],
    },
    columns: ['b', 'count()'],
    types: ['Nullable(String)', 'UInt64'],
    rows: [['Chrome', 4]],
  },
  {
    name: 'DISTINCT person properties',
    query: 'SELECT DISTINCT person.properties.email AS email FROM events ORDER BY email',
    sql: {
      sql: 'SELECT DISTINCT json_extract_string(person_properties, ?) AS c0 FROM events WHERE team_id = ? ORDER BY c0 ASC LIMIT ? OFFSET ?',
      params: ['/email', 1, 100, 0],
    },
    rows: [['ann@x.com'], ['bob@y.com'], [null]],
  },
  {
    // Written out twice, the property's path would be two parameters DuckDB cannot match.
    name: 'GROUP BY a JSON property: by its alias',
    query: 'SELECT properties.plan AS plan, count() FROM events GROUP BY properties.plan ORDER BY plan',
    sql: {
      sql: 'SELECT json_extract_string(properties, ?) AS c0, count(*) AS c1 FROM events WHERE team_id = ? GROUP BY c0 ORDER BY c0 ASC LIMIT ? OFFSET ?',
      params: ['/plan', 1, 100, 0],
    },
    rows: [['free', 1], ['pro', 1], [null, 5]],
  },
  {
    name: 'LIMIT and OFFSET',
    query: 'SELECT uuid FROM events ORDER BY timestamp LIMIT 2 OFFSET 1',
    sql: { sql: 'SELECT uuid AS c0 FROM events WHERE team_id = ? ORDER BY timestamp ASC LIMIT ? OFFSET ?', params: [1, 2, 1] },
    rows: [['e2'], ['e3']],
  },
  {
    name: 'LIMIT and OFFSET from placeholders',
    query: 'SELECT uuid FROM events ORDER BY timestamp DESC LIMIT {n} OFFSET {skip}',
    values: { n: 1, skip: 2 },
    rows: [['e5']],
  },
  {
    name: 'date functions and uniq',
    query: "SELECT toStartOfDay(timestamp) AS day, uniq(distinct_id) FROM events WHERE timestamp < '2024-01-10' GROUP BY day ORDER BY day",
    types: ["DateTime64(6, 'UTC')", 'UInt64'],
    rows: [['2024-01-01T00:00:00.000Z', 1], ['2024-01-05T00:00:00.000Z', 1], ['2024-01-08T00:00:00.000Z', 1], ['2024-01-09T00:00:00.000Z', 1]],
  },
  { name: 'sum over text numbers', query: "SELECT sum(toFloat(properties.price)) FROM events WHERE event = '$pageview'", rows: [[35.5]] },
  { name: 'qualified fields', query: "SELECT events.event FROM events WHERE events.properties.plan = 'pro'", rows: [['$pageview']] },
  { name: 'aggregates without GROUP BY', query: 'SELECT count(), max(timestamp) FROM events', rows: [[7, '2024-01-11T00:00:00.000Z']] },
  { name: 'a bare alias', query: "SELECT event e FROM events WHERE uuid = 'e3'", columns: ['e'], rows: [['signup']] },
  {
    name: 'LIKE and NOT',
    query: "select uuid from events where properties.$current_url like '%example.com/%' and not event = 'purchase' order by uuid",
    rows: [['e1'], ['e5']],
  },
  { name: 'GROUP BY a position', query: 'SELECT distinct_id, count() FROM events GROUP BY 1 ORDER BY 1', rows: [['u1', 4], ['u2', 1], ['u3', 2]] },
  {
    name: "the event's person: properties, created_at, is_identified (NULL without a person)",
    query: "SELECT uuid, events.person.properties.email, person.created_at, person.is_identified FROM events WHERE uuid IN ('e2', 'e3', 'e4') ORDER BY uuid",
    sql: {
      sql:
        'SELECT uuid AS c0, json_extract_string(person_properties, ?) AS c1, person_created_at AS c2, person_is_identified AS c3 FROM events ' +
        'WHERE team_id = ? AND (uuid IN (?, ?, ?)) ORDER BY c0 ASC LIMIT ? OFFSET ?',
      params: ['/email', 1, 'e2', 'e3', 'e4', 100, 0],
    },
    columns: ['uuid', 'events.person.properties.email', 'person.created_at', 'person.is_identified'],
    types: ['String', 'Nullable(String)', "Nullable(DateTime64(6, 'UTC'))", 'Nullable(UInt8)'],
    rows: [['e2', 'bob@y.com', '2024-01-02T08:00:00.000Z', false], ['e3', 'ann@x.com', '2023-12-01T00:00:00.000Z', true], ['e4', null, null, null]],
  },
  {
    name: 'persons: id, a property, is_identified, created_at',
    query: 'SELECT id, properties.email, is_identified, created_at FROM persons ORDER BY created_at',
    sql: {
      sql: 'SELECT id AS c0, json_extract_string(properties, ?) AS c1, is_identified AS c2, created_at AS c3 FROM persons WHERE team_id = ? ORDER BY c3 ASC LIMIT ? OFFSET ?',
      params: ['/email', 1, 100, 0],
    },
    types: ['String', 'Nullable(String)', 'UInt8', "DateTime64(6, 'UTC')"],
    rows: [['p1', 'ann@x.com', true, '2023-12-01T00:00:00.000Z'], ['p2', 'bob@y.com', false, '2024-01-02T08:00:00.000Z']],
  },
  {
    // No hot columns on persons: `$browser` is a JSON path there, not the events' mat_browser.
    name: 'persons: SELECT * with an alias, a hot event key read from the JSON',
    query: "SELECT * FROM persons p WHERE p.properties.name = 'Ann' AND properties.$browser IS NULL",
    sql: {
      sql:
        'SELECT id AS c0, created_at AS c1, properties AS c2, is_identified AS c3 FROM persons ' +
        'WHERE team_id = ? AND (json_extract_string(properties, ?) = ? AND json_extract_string(properties, ?) IS NULL) LIMIT ? OFFSET ?',
      params: [1, '/name', 'Ann', '/$browser', 100, 0],
    },
    columns: ['id', 'created_at', 'properties', 'is_identified'],
    rows: [['p1', '2023-12-01T00:00:00.000Z', JSON.stringify(FIXTURE_PERSONS[0]!.properties), true]],
  },
  {
    name: "persons: pdi.distinct_id, one row per distinct id",
    query: 'SELECT pdi.distinct_id, persons.id FROM persons ORDER BY 1',
    sql: { sql: 'SELECT pdi_distinct_id AS c0, id AS c1 FROM persons WHERE team_id = ? ORDER BY c0 ASC LIMIT ? OFFSET ?', params: [1, 100, 0] },
    rows: [['u1', 'p1'], ['u1-old', 'p1'], ['u2', 'p2']],
  },
  {
    name: 'coalesce and ifNull: the first value set, one type',
    query: "SELECT uuid, coalesce(properties.plan, person.properties.email, 'none'), ifNull(toInt(properties.price), 0) FROM events WHERE uuid IN ('e1', 'e3', 'e4') ORDER BY uuid",
    types: ['String', 'String', 'Int64'],
    rows: [['e1', 'pro', 10], ['e3', 'ann@x.com', 5], ['e4', 'none', 100]],
  },
  {
    name: 'coalesce of a number and text compares numbers',
    query: 'SELECT coalesce(toFloat(properties.price), properties.pct) AS p FROM events WHERE uuid IN {ids} ORDER BY p',
    values: { ids: ['e3', 'e5'] },
    sql: {
      sql: 'SELECT coalesce(TRY_CAST(json_extract_string(properties, ?) AS DOUBLE), TRY_CAST(json_extract_string(properties, ?) AS DOUBLE)) AS c0 FROM events WHERE team_id = ? AND (uuid IN (?, ?)) ORDER BY c0 ASC LIMIT ? OFFSET ?',
      params: ['/price', '/pct', 1, 'e3', 'e5', 100, 0],
    },
    types: ['Nullable(Float64)'],
    rows: [[5], [null]],
  },
  { name: 'persons: grouped', query: 'SELECT is_identified, count() FROM persons GROUP BY is_identified ORDER BY 1', rows: [[false, 1], [true, 1]] },
  { name: 'persons: a numeric property', query: 'SELECT toInt(properties.age) + 1 FROM persons WHERE properties.age IS NOT NULL', rows: [[42]] },

  { name: 'a column neither grouped nor aggregated', query: 'SELECT event, timestamp FROM events GROUP BY event', error: refused(`Expression must be in GROUP BY or inside an aggregate function ${at(14)}`) },
  { name: 'an aggregate in WHERE', query: 'SELECT count() FROM events WHERE count() > 1', error: refused(`Aggregate functions are not allowed in WHERE (use HAVING) ${at(41)}`) },
  { name: 'an aggregate in GROUP BY', query: 'SELECT event FROM events GROUP BY count()', error: refused(`Aggregate functions are not allowed in GROUP BY ${at(34)}`) },
  { name: 'nested through an alias', query: 'SELECT count() AS c FROM events HAVING sum(c) > 1', error: refused(`Aggregate functions cannot be nested ${at(39)}`) },
  { name: 'an unknown table', query: 'SELECT uuid FROM groups', error: refused(`Unknown table 'groups' ${at(17)}`) },
  { name: 'an events field on persons', query: 'SELECT event FROM persons', error: refused(`Unknown field 'event' ${at(7)}`) },
  { name: "an event's person field on persons", query: 'SELECT person.properties.email FROM persons', error: refused(`Unknown field 'person.properties.email' ${at(7)}`) },
  { name: "persons' pdi on events", query: 'SELECT pdi.distinct_id FROM events', error: refused(`Unknown field 'pdi.distinct_id' ${at(7)}`) },
  { name: 'an unknown person field', query: 'SELECT uuid, person.uuid FROM events', error: refused(`Unknown field 'person.uuid' ${at(13)}`) },
  { name: 'a persons alias that is a field name', query: 'SELECT id FROM persons pdi', error: refused(`Table alias 'pdi' is a field name ${at(15)}`) },
  { name: 'a subquery in FROM', query: 'SELECT uuid FROM (SELECT uuid FROM events)', error: refused(`Subqueries are not supported ${at(17)}`) },
  { name: 'a table function', query: "SELECT * FROM read_csv('/etc/passwd')", error: refused(`Table functions are not supported ('read_csv') ${at(14)}`) },
  { name: 'no FROM', query: 'SELECT 1', error: refused(`Unexpected end of expression ${at(8)}`) },
  { name: 'a missing placeholder value', query: 'SELECT uuid FROM events WHERE event = {missing}', error: refused(`Placeholder {missing} has no value in values ${at(38)}`) },
  { name: 'a list placeholder outside IN', query: 'SELECT uuid FROM events WHERE event = {names}', values: { names: ['a'] }, error: refused(`Placeholder {names} is a list: only IN takes one ${at(38)}`) },
  { name: 'a negative LIMIT', query: 'SELECT uuid FROM events LIMIT -1', error: refused(`Expected a whole number ${at(30)}`) },
  { name: 'ORDER BY a position past the list', query: 'SELECT uuid FROM events ORDER BY 3', error: refused(`ORDER BY position 3 is not in the select list ${at(33)}`) },
  { name: 'ORDER BY a constant', query: "SELECT uuid FROM events ORDER BY 'x'", error: refused(`ORDER BY needs a field or an expression of fields ${at(33)}`) },
  { name: 'DISTINCT ordered by an unselected field', query: 'SELECT DISTINCT event FROM events ORDER BY timestamp', error: refused(`With DISTINCT, ORDER BY expressions must be in the select list ${at(43)}`) },
  { name: 'a table alias that is a field name', query: 'SELECT uuid FROM events properties', error: refused(`Table alias 'properties' is a field name ${at(17)}`) },
  { name: 'an alias used twice', query: 'SELECT uuid AS a, event AS a FROM events', error: refused(`Alias 'a' is used twice ${at(18)}`) },
  { name: 'an empty query', query: '  ', error: refused('query must be a non-empty string') },
  { name: 'values not an object', query: 'SELECT uuid FROM events', values: [1], error: refused('values must be an object', 'values') },
  { name: 'a nested value', query: 'SELECT uuid FROM events', values: { x: { y: 1 } }, error: refused('values.x must be a string, number, boolean or null, or a list of them', 'values') },
];

/** Each must be a 400, or run inside team 1 and change nothing. */
const PROBES: StatementCase[] = [
  { name: 'a second statement', query: 'SELECT uuid FROM events; DROP TABLE events', error: refused(`Unexpected character ';' ${at(23)}`) },
  { name: 'UNION', query: 'SELECT uuid FROM events UNION ALL SELECT uuid FROM events', error: refused(`Unsupported keyword 'UNION' ${at(24)}`) },
  { name: 'JOIN', query: 'SELECT uuid FROM events JOIN persons ON 1 = 1', error: refused(`Unsupported keyword 'JOIN' ${at(24)}`) },
  { name: 'a subquery in IN', query: 'SELECT uuid FROM events WHERE uuid IN (SELECT uuid FROM events)', error: refused(`Unsupported keyword 'SELECT' ${at(39)}`) },
  { name: 'a subquery in ORDER BY', query: 'SELECT uuid FROM events ORDER BY (SELECT 1)', error: refused(`Unsupported keyword 'SELECT' ${at(34)}`) },
  { name: 'team_id', query: 'SELECT uuid FROM events WHERE event = event OR team_id = 2', error: refused(`Unknown field 'team_id' ${at(47)}`) },
  { name: 'a quoted team_id', query: 'SELECT "team_id" FROM events', error: refused(`Unknown field 'team_id' ${at(7)}`) },
  { name: "persons' team_id", query: 'SELECT id FROM persons WHERE persons.team_id = 2', error: refused(`Unknown field 'team_id' ${at(29)}`) },
  { name: 'OR widens only the WHERE over persons', query: "SELECT id FROM persons WHERE properties.email = 'eve@z.com' OR 1 = 1 ORDER BY id", rows: [['p1'], ['p2']] },
  { name: "OR widens only the WHERE over persons' distinct ids", query: "SELECT pdi.distinct_id FROM persons WHERE pdi.distinct_id = 'u9' OR true ORDER BY 1", rows: [['u1'], ['u1-old'], ['u2']] },
  { name: 'SQL in a person property key', query: "SELECT id FROM persons WHERE properties.`email') OR ('1` IS NULL ORDER BY id", rows: [['p1'], ['p2']] },
  { name: 'a qualified team_id', query: 'SELECT uuid FROM events e2 WHERE e2.team_id = 2', error: refused(`Unknown field 'team_id' ${at(33)}`) },
  { name: 'a DuckDB function', query: "SELECT read_text('/etc/passwd') FROM events", error: refused(`Unknown function 'read_text' ${at(7)}`) },
  { name: 'a comment', query: 'SELECT uuid FROM events -- WHERE 1', error: refused(`Comments are not allowed ${at(24)}`) },
  { name: 'a table placeholder', query: 'SELECT uuid FROM {t}', values: { t: 'events' }, error: refused(`Unexpected token 't' ${at(17)}`) },
  { name: 'a broken placeholder', query: 'SELECT uuid FROM events WHERE event = {x', error: refused(`Expected a placeholder {name} ${at(38)}`) },
  { name: 'a huge OFFSET', query: 'SELECT uuid FROM events OFFSET 99999999999999999999', error: refused(`Expected a whole number ${at(31)}`) },
  { name: 'OR widens only the WHERE', query: "SELECT uuid FROM events WHERE event = 'x' OR 1 = 1 ORDER BY uuid", rows: [['e1'], ['e2'], ['e3'], ['e4'], ['e5'], ['e6'], ['e7']] },
  { name: 'HAVING that is always true', query: 'SELECT uuid FROM events GROUP BY uuid HAVING 1 = 1 OR 1 = 1 ORDER BY uuid', rows: [['e1'], ['e2'], ['e3'], ['e4'], ['e5'], ['e6'], ['e7']] },
  { name: 'SQL in a value', query: 'SELECT uuid FROM events WHERE event = {x}', values: { x: "' OR 1=1 --" }, rows: [] },
  { name: 'SQL in a list value', query: 'SELECT uuid FROM events WHERE event IN {x}', values: { x: ["') OR ('1' = '1", 'signup'] }, rows: [['e3']] },
  { name: 'SQL in a property key', query: "SELECT properties.`a') OR ('1` FROM events WHERE uuid = 'e1'", rows: [[null]] },
  { name: 'SQL in an alias', query: 'SELECT uuid AS `c0 FROM x; --` FROM events AS `events WHERE 1 = 1 --` ORDER BY uuid LIMIT 1', columns: ['c0 FROM x; --'], rows: [['e1']] },
];

export const STATEMENT_CASES: StatementCase[] = [...CASES, ...PROBES.map((c): StatementCase => ({ ...c, probe: true }))];
