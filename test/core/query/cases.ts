/**
 * One table of query cases, used three ways (conventions, principle 5):
 *  - compile.test.ts: the exact `{sql, params}` (or the exact 400) of each case;
 *  - duckdb.test.ts: each case run on the fixture below, against its known answer, with the team
 *    scope checked by running it once more on a relation that holds only team 1's rows;
 *  - injection.test.ts: the `probe` cases must be a 400 AppError or run cleanly, inside team 1,
 *    leaving the database unchanged.
 */
import type { EventFilterParams, QueryParam } from '../../../src/core/query';

export const NOW = new Date('2024-01-10T12:00:00Z');
export const TEAM = 1;

export interface FixtureEvent {
  uuid: string;
  team_id: number;
  event: string;
  distinct_id: string;
  person_id: string | null;
  timestamp: string;
  properties: Record<string, unknown>;
  person_properties: Record<string, unknown> | null;
  elements_chain?: string;
}

const ann = { email: 'ann@x.com', name: 'Ann', age: 41 };

/** Team 1: e1–e7 (e7 is in the future, past the default `before`); team 2: x1–x3. */
export const FIXTURE_EVENTS: FixtureEvent[] = [
  {
    uuid: 'e1', team_id: 1, event: '$pageview', distinct_id: 'u1', person_id: 'p1', timestamp: '2024-01-01 10:00:00',
    properties: {
      $browser: 'Chrome', $os: 'Mac OS X', $current_url: 'https://example.com/a', price: 10, plan: 'pro',
      'a/b': 'slash', 'a~b': 'tilde', nested: { x: { y: 'deep' } }, "quote'd": "it's", 'back\\slash': 'bs', 'ünï': 'unicode',
    },
    person_properties: ann, elements_chain: 'a.btn:nth-child="1"',
  },
  {
    uuid: 'e2', team_id: 1, event: '$pageview', distinct_id: 'u2', person_id: 'p2', timestamp: '2024-01-05 12:00:00',
    properties: { $browser: 'Firefox', $os: 'Windows', price: '25.5', plan: 'free', signup_date: '2024-01-03T00:00:00Z' },
    person_properties: { email: 'bob@y.com' },
  },
  {
    uuid: 'e3', team_id: 1, event: 'signup', distinct_id: 'u1', person_id: 'p1', timestamp: '2024-01-08 09:30:00',
    properties: { $browser: 'Chrome', price: 5, plan: null, flag: true, signup_date: '2023-12-31', pct: '50%' },
    person_properties: ann,
  },
  {
    uuid: 'e4', team_id: 1, event: 'purchase', distinct_id: 'u3', person_id: null, timestamp: '2024-01-09 23:59:59.5',
    properties: { price: 100, $current_url: 'https://example.com/checkout', signup_date: '2024-01-09T10:00:00+02:00', pct: '50 percent' },
    person_properties: null,
  },
  {
    uuid: 'e5', team_id: 1, event: '$pageview', distinct_id: 'u3', person_id: null, timestamp: '2024-01-10 11:59:00',
    properties: { $browser: 'Safari', $current_url: 'https://example.com/b?x=1', nested: { x: { y: 'other' } }, price: 'n/a' },
    person_properties: null,
  },
  {
    uuid: 'e6', team_id: 1, event: '$pageview', distinct_id: 'u1', person_id: 'p1', timestamp: '2024-01-10 12:00:03',
    properties: { $browser: 'Chrome' }, person_properties: ann,
  },
  {
    uuid: 'e7', team_id: 1, event: '$pageview', distinct_id: 'u1', person_id: 'p1', timestamp: '2024-01-11 00:00:00',
    properties: { $browser: 'Chrome' }, person_properties: ann,
  },
  {
    uuid: 'x1', team_id: 2, event: '$pageview', distinct_id: 'u1', person_id: 'q1', timestamp: '2024-01-05 12:00:00',
    properties: { $browser: 'Chrome', price: 10, plan: 'pro' }, person_properties: { email: 'ann@x.com' },
  },
  {
    uuid: 'x2', team_id: 2, event: 'secret', distinct_id: 'u9', person_id: 'q9', timestamp: '2024-01-09 00:00:00',
    properties: { $browser: 'Chrome', plan: 'pro', price: 1000 }, person_properties: { email: 'eve@z.com' },
  },
  {
    uuid: 'x3', team_id: 2, event: 'signup', distinct_id: 'u2', person_id: null, timestamp: '2024-01-02 00:00:00',
    properties: {}, person_properties: null,
  },
];

/** The persons of the fixture's events (storage joins them in by distinct id), with their distinct ids. */
export interface FixturePerson {
  id: string;
  team_id: number;
  created_at: string;
  properties: Record<string, unknown>;
  is_identified: boolean;
  distinct_ids: string[];
}

export const FIXTURE_PERSONS: FixturePerson[] = [
  { id: 'p1', team_id: 1, created_at: '2023-12-01 00:00:00', properties: ann, is_identified: true, distinct_ids: ['u1', 'u1-old'] },
  { id: 'p2', team_id: 1, created_at: '2024-01-02 08:00:00', properties: { email: 'bob@y.com' }, is_identified: false, distinct_ids: ['u2'] },
  { id: 'q1', team_id: 2, created_at: '2024-01-01 00:00:00', properties: { email: 'ann@x.com' }, is_identified: true, distinct_ids: ['u1'] },
  { id: 'q9', team_id: 2, created_at: '2024-01-03 00:00:00', properties: { email: 'eve@z.com' }, is_identified: false, distinct_ids: ['u9'] },
];

export interface Frag {
  sql: string;
  params: QueryParam[];
}

export interface QueryCase {
  name: string;
  /** With `select`, the case is compileSelect(select, where); `filters` go through compileEventFilters. */
  select?: string[];
  where?: string[];
  filters?: EventFilterParams;
  /** Exact compiled output; every key given is compared whole. */
  sql?: {
    filters?: Frag;
    select?: Frag;
    where?: Frag | null;
    having?: Frag | null;
    groupBy?: string | null;
    orderBy?: string;
    columns?: string[];
    types?: string[];
  };
  /** Known answer on the fixture for team 1: result rows of a select case. */
  rows?: unknown[][];
  /** Known answer of a filter-only case: uuids, newest first. */
  uuids?: string[];
  /** Trusted ORDER BY used when running, where the default order has ties. */
  orderBy?: string;
  error?: { attr: string; detail: string };
  /** An injection probe (also checked like every other case). */
  probe?: true;
}

const BEFORE = 'timestamp < CAST(? AS TIMESTAMP)';
const BP = '2024-01-10 12:00:05.000000';
const ALL = ['e6', 'e5', 'e4', 'e3', 'e2', 'e1'];
const props = (filters: unknown): EventFilterParams => ({ properties: JSON.stringify(filters) });
const ESC = "ESCAPE '\\'";

const FILTER_CASES: QueryCase[] = [
  { name: 'no filters: default upper bound now + 5 s hides e7', filters: {}, sql: { filters: { sql: BEFORE, params: [BP] } }, uuids: ALL },
  { name: 'event', filters: { event: '$pageview' }, sql: { filters: { sql: `event = ? AND ${BEFORE}`, params: ['$pageview', BP] } }, uuids: ['e6', 'e5', 'e2', 'e1'] },
  { name: 'distinct_id', filters: { distinct_id: 'u1' }, sql: { filters: { sql: `distinct_id = ? AND ${BEFORE}`, params: ['u1', BP] } }, uuids: ['e6', 'e3', 'e1'] },
  { name: 'person_id', filters: { person_id: 'p2' }, sql: { filters: { sql: `person_id = ? AND ${BEFORE}`, params: ['p2', BP] } }, uuids: ['e2'] },
  { name: 'empty strings are no filter', filters: { event: '', distinct_id: '', after: '' }, uuids: ALL },
  {
    name: 'after is exclusive', filters: { after: '2024-01-08T09:30:00Z' },
    sql: { filters: { sql: `timestamp > CAST(? AS TIMESTAMP) AND ${BEFORE}`, params: ['2024-01-08 09:30:00.000000', BP] } },
    uuids: ['e6', 'e5', 'e4'],
  },
  {
    name: 'before is exclusive', filters: { before: '2024-01-05T12:00:00Z' },
    sql: { filters: { sql: BEFORE, params: ['2024-01-05 12:00:00.000000'] } }, uuids: ['e1'],
  },
  { name: 'before keeps microseconds (next-page cursor)', filters: { before: '2024-01-09T23:59:59.500001+00:00' }, uuids: ['e4', 'e3', 'e2', 'e1'] },
  { name: 'before the exact cursor instant excludes it', filters: { before: '2024-01-09T23:59:59.5+00:00' }, uuids: ['e3', 'e2', 'e1'] },
  { name: 'before with an offset (23:00 UTC)', filters: { before: '2024-01-10T01:00:00+02:00' }, uuids: ['e3', 'e2', 'e1'] },
  { name: 'after -2d', filters: { after: '-2d' }, uuids: ['e6', 'e5', 'e4'] },
  { name: 'after -24h', filters: { after: '-24h' }, uuids: ['e6', 'e5', 'e4'] },
  { name: 'after -1w', filters: { after: '-1w' }, uuids: ['e6', 'e5', 'e4', 'e3', 'e2'] },
  { name: 'after -1m (a month)', filters: { after: '-1m' }, uuids: ALL },
  { name: 'after -30M (minutes)', filters: { after: '-30M' }, uuids: ['e6', 'e5'] },
  { name: 'after dStart (today 00:00)', filters: { after: 'dStart' }, uuids: ['e6', 'e5'] },
  { name: 'before and after together', filters: { after: '2024-01-02', before: '2024-01-09' }, uuids: ['e3', 'e2'] },
  {
    name: 'bad before', filters: { before: 'yesterday' },
    error: { attr: 'before', detail: "Invalid date 'yesterday': use ISO 8601 or a relative date such as -7d, -24h or -1m" },
  },
  {
    name: 'bad after (month 13)', filters: { after: '2024-13-01' },
    error: { attr: 'after', detail: "Invalid date '2024-13-01': use ISO 8601 or a relative date such as -7d, -24h or -1m" },
  },
  {
    name: 'exact on a hot property uses its column', filters: props([{ key: '$browser', value: 'Chrome', operator: 'exact', type: 'event' }]),
    sql: { filters: { sql: `${BEFORE} AND mat_browser = ?`, params: [BP, 'Chrome'] } }, uuids: ['e6', 'e3', 'e1'],
  },
  {
    name: 'operator and type default to exact and event', filters: props([{ key: 'plan', value: 'pro' }]),
    sql: { filters: { sql: `${BEFORE} AND json_extract_string(properties, ?) = ?`, params: [BP, '/plan', 'pro'] } }, uuids: ['e1'],
  },
  {
    name: 'exact with a list is IN', filters: props([{ key: '$browser', value: ['Chrome', 'Safari'] }]),
    sql: { filters: { sql: `${BEFORE} AND mat_browser IN (?, ?)`, params: [BP, 'Chrome', 'Safari'] } }, uuids: ['e6', 'e5', 'e3', 'e1'],
  },
  { name: 'exact with a one-value list', filters: props([{ key: '$browser', value: ['Safari'] }]), uuids: ['e5'] },
  { name: 'exact with an empty list matches everything (as PostHog)', filters: props([{ key: '$browser', value: [] }]), uuids: ALL },
  { name: 'exact with a number matches its text', filters: props([{ key: 'price', value: 10 }]), uuids: ['e1'] },
  { name: 'exact with a boolean', filters: props([{ key: 'flag', value: true }]), uuids: ['e3'] },
  {
    name: 'is_not also matches a missing property', filters: props([{ key: '$browser', value: 'Chrome', operator: 'is_not' }]),
    sql: { filters: { sql: `${BEFORE} AND mat_browser IS DISTINCT FROM ?`, params: [BP, 'Chrome'] } }, uuids: ['e5', 'e4', 'e2'],
  },
  {
    name: 'is_not with a list', filters: props([{ key: '$browser', value: ['Chrome', 'Firefox'], operator: 'is_not' }]),
    sql: { filters: { sql: `${BEFORE} AND COALESCE(mat_browser NOT IN (?, ?), TRUE)`, params: [BP, 'Chrome', 'Firefox'] } }, uuids: ['e5', 'e4'],
  },
  { name: 'negation flips the operator', filters: props([{ key: '$browser', value: 'Chrome', negation: true }]), uuids: ['e5', 'e4', 'e2'] },
  {
    name: 'icontains is case-insensitive', filters: props([{ key: '$current_url', value: 'EXAMPLE.com/B', operator: 'icontains' }]),
    sql: { filters: { sql: `${BEFORE} AND mat_current_url ILIKE ? ${ESC}`, params: [BP, '%EXAMPLE.com/B%'] } }, uuids: ['e5'],
  },
  {
    name: 'icontains treats % and _ literally', filters: props([{ key: 'pct', value: '50%', operator: 'icontains' }]),
    sql: { filters: { sql: `${BEFORE} AND json_extract_string(properties, ?) ILIKE ? ${ESC}`, params: [BP, '/pct', '%50\\%%'] } }, uuids: ['e3'],
  },
  {
    name: 'not_icontains matches a missing property', filters: props([{ key: '$current_url', value: 'checkout', operator: 'not_icontains' }]),
    sql: { filters: { sql: `${BEFORE} AND COALESCE(mat_current_url NOT ILIKE ? ${ESC}, TRUE)`, params: [BP, '%checkout%'] } },
    uuids: ['e6', 'e5', 'e3', 'e2', 'e1'],
  },
  {
    name: 'regex', filters: props([{ key: '$current_url', value: '^https://example\\.com/[ab]', operator: 'regex' }]),
    sql: { filters: { sql: `${BEFORE} AND regexp_matches(mat_current_url, ?)`, params: [BP, '^https://example\\.com/[ab]'] } }, uuids: ['e5', 'e1'],
  },
  {
    name: 'not_regex matches a missing property', filters: props([{ key: '$current_url', value: '^https://example\\.com/[ab]', operator: 'not_regex' }]),
    sql: { filters: { sql: `${BEFORE} AND NOT COALESCE(regexp_matches(mat_current_url, ?), FALSE)`, params: [BP, '^https://example\\.com/[ab]'] } },
    uuids: ['e6', 'e4', 'e3', 'e2'],
  },
  { name: 'regex with RE2 flags', filters: props([{ key: '$browser', value: '(?i)^chrome$', operator: 'regex' }]), uuids: ['e6', 'e3', 'e1'] },
  {
    name: 'invalid regex is a 400', filters: props([{ key: '$current_url', value: '(', operator: 'regex' }]),
    error: { attr: 'properties', detail: "Invalid property filter at properties[0]: invalid regular expression for '$current_url' (missing ))" },
  },
  {
    name: 'lookahead is not RE2', filters: props([{ key: '$current_url', value: 'a(?=b)', operator: 'regex' }]),
    error: { attr: 'properties', detail: "Invalid property filter at properties[0]: invalid regular expression for '$current_url' (invalid perl operator: (?=)" },
  },
  {
    name: 'gt compares numbers; non-numbers never match', filters: props([{ key: 'price', value: 9, operator: 'gt' }]),
    sql: { filters: { sql: `${BEFORE} AND TRY_CAST(json_extract_string(properties, ?) AS DOUBLE) > ?`, params: [BP, '/price', 9] } },
    uuids: ['e4', 'e2', 'e1'],
  },
  { name: 'lte with a numeric string value', filters: props([{ key: 'price', value: '10', operator: 'lte' }]), uuids: ['e3', 'e1'] },
  { name: 'gte with a float', filters: props([{ key: 'price', value: 25.5, operator: 'gte' }]), uuids: ['e4', 'e2'] },
  {
    name: 'gt with a non-number is a 400', filters: props([{ key: 'price', value: 'abc', operator: 'gt' }]),
    error: { attr: 'properties', detail: "Invalid property filter at properties[0]: 'abc' is not a number" },
  },
  {
    name: 'is_set (a JSON null is not set)', filters: props([{ key: 'plan', operator: 'is_set' }]),
    sql: { filters: { sql: `${BEFORE} AND json_extract_string(properties, ?) IS NOT NULL`, params: [BP, '/plan'] } }, uuids: ['e2', 'e1'],
  },
  { name: 'is_not_set', filters: props([{ key: 'plan', operator: 'is_not_set', value: 'ignored' }]), uuids: ['e6', 'e5', 'e4', 'e3'] },
  {
    name: 'is_date_before', filters: props([{ key: 'signup_date', value: '2024-01-01', operator: 'is_date_before' }]),
    sql: {
      filters: {
        sql: `${BEFORE} AND CAST(TRY_CAST(json_extract_string(properties, ?) AS TIMESTAMPTZ) AS TIMESTAMP) < CAST(? AS TIMESTAMP)`,
        params: [BP, '/signup_date', '2024-01-01 00:00:00.000000'],
      },
    },
    uuids: ['e3'],
  },
  { name: 'is_date_after honours the offset in the value', filters: props([{ key: 'signup_date', value: '2024-01-05', operator: 'is_date_after' }]), uuids: ['e4'] },
  { name: 'is_date_after with a relative date', filters: props([{ key: 'signup_date', value: '-7d', operator: 'is_date_after' }]), uuids: ['e4'] },
  {
    name: 'is_date_exact with a date compares days', filters: props([{ key: 'signup_date', value: '2023-12-31', operator: 'is_date_exact' }]),
    sql: {
      filters: {
        sql: `${BEFORE} AND CAST(CAST(TRY_CAST(json_extract_string(properties, ?) AS TIMESTAMPTZ) AS TIMESTAMP) AS DATE) = CAST(? AS DATE)`,
        params: [BP, '/signup_date', '2023-12-31'],
      },
    },
    uuids: ['e3'],
  },
  {
    name: 'bad date value', filters: props([{ key: 'signup_date', value: 'soon', operator: 'is_date_after' }]),
    error: { attr: 'properties', detail: "Invalid date 'soon': use ISO 8601 or a relative date such as -7d, -24h or -1m" },
  },
  {
    name: 'person property', filters: props([{ key: 'email', value: 'ann@x.com', type: 'person' }]),
    sql: { filters: { sql: `${BEFORE} AND json_extract_string(person_properties, ?) = ?`, params: [BP, '/email', 'ann@x.com'] } },
    uuids: ['e6', 'e3', 'e1'],
  },
  { name: 'person icontains', filters: props([{ key: 'email', value: 'Y.COM', type: 'person', operator: 'icontains' }]), uuids: ['e2'] },
  { name: 'person is_not_set (no person)', filters: props([{ key: 'email', type: 'person', operator: 'is_not_set' }]), uuids: ['e5', 'e4'] },
  {
    name: 'OR group', filters: props({ type: 'OR', values: [{ key: '$browser', value: 'Firefox' }, { key: 'price', value: 50, operator: 'gt' }] }),
    sql: {
      filters: {
        sql: `${BEFORE} AND (mat_browser = ? OR TRY_CAST(json_extract_string(properties, ?) AS DOUBLE) > ?)`,
        params: [BP, 'Firefox', '/price', 50],
      },
    },
    uuids: ['e4', 'e2'],
  },
  {
    name: 'nested groups', filters: props({
      type: 'AND',
      values: [{ type: 'OR', values: [{ key: '$browser', value: 'Firefox' }, { key: '$browser', value: 'Chrome' }] }, { key: 'plan', operator: 'is_set' }],
    }),
    sql: {
      filters: {
        sql: `${BEFORE} AND (mat_browser = ? OR mat_browser = ?) AND json_extract_string(properties, ?) IS NOT NULL`,
        params: [BP, 'Firefox', 'Chrome', '/plan'],
      },
    },
    uuids: ['e2', 'e1'],
  },
  { name: 'a list of filters is AND', filters: props([{ key: '$browser', value: 'Chrome' }, { key: 'price', value: 6, operator: 'gt' }]), uuids: ['e1'] },
  { name: 'empty group', filters: props({ type: 'OR', values: [] }), uuids: ALL },
  {
    name: 'event_metadata filters a column', filters: props([{ key: 'distinct_id', value: 'u3', type: 'event_metadata' }]),
    sql: { filters: { sql: `${BEFORE} AND distinct_id = ?`, params: [BP, 'u3'] } }, uuids: ['e5', 'e4'],
  },
  {
    name: 'hogql filter', filters: props([{ key: 'properties.price > 20', type: 'hogql' }]),
    sql: { filters: { sql: `${BEFORE} AND TRY_CAST(json_extract_string(properties, ?) AS DOUBLE) > ?`, params: [BP, '/price', 20] } },
    uuids: ['e4', 'e2'],
  },
  {
    name: "keys with / and ~ become escaped JSON pointers", filters: props([{ key: 'a/b', value: 'slash' }, { key: 'a~b', value: 'tilde' }]),
    sql: {
      filters: {
        sql: `${BEFORE} AND json_extract_string(properties, ?) = ? AND json_extract_string(properties, ?) = ?`,
        params: [BP, '/a~1b', 'slash', '/a~0b', 'tilde'],
      },
    },
    uuids: ['e1'],
  },
  { name: 'keys with quotes, backslashes and unicode', filters: props([{ key: "quote'd", value: "it's" }, { key: 'back\\slash', value: 'bs' }, { key: 'ünï', value: 'unicode' }]), uuids: ['e1'] },
  { name: 'unparsable properties', filters: { properties: '[{' }, error: { attr: 'properties', detail: 'Properties are unparsable!' } },
  { name: 'already-parsed properties', filters: { properties: [{ key: '$browser', value: 'Safari' }] }, uuids: ['e5'] },
  {
    name: 'cohort filters are not supported', filters: props([{ key: 'id', value: 3, type: 'cohort' }]),
    error: { attr: 'properties', detail: "Invalid property filter at properties[0]: property filter type 'cohort' is not supported" },
  },
  {
    name: 'unknown operator', filters: props([{ key: 'price', value: [1, 2], operator: 'between' }]),
    error: { attr: 'properties', detail: "Invalid property filter at properties[0]: operator 'between' is not supported" },
  },
  {
    name: 'a filter without a key', filters: props({ type: 'AND', values: [{ key: 'a', value: 'b' }, { value: 'x' }] }),
    error: { attr: 'properties', detail: "Invalid property filter at properties.values[1]: a filter needs a string 'key'" },
  },
  {
    name: 'object values are refused', filters: props([{ key: 'a', value: { $gt: 1 } }]),
    error: { attr: 'properties', detail: 'Invalid property filter at properties[0]: values must be strings, numbers or booleans' },
  },
];

const SELECT_CASES: QueryCase[] = [
  {
    name: 'group by the non-aggregate columns', select: ['event', 'count()'], where: ["event != 'purchase'"],
    sql: {
      select: { sql: 'event AS c0, count(*) AS c1', params: [] }, where: { sql: 'event <> ?', params: ['purchase'] },
      having: null, groupBy: 'c0', orderBy: 'c1 DESC', columns: ['event', 'count()'], types: ['String', 'UInt64'],
    },
    rows: [['$pageview', 4], ['signup', 1]],
  },
  {
    name: 'plain columns, first column ascending', select: ['uuid', 'properties.$browser'], where: ["properties.$browser = 'Chrome'"],
    sql: {
      select: { sql: 'uuid AS c0, mat_browser AS c1', params: [] }, where: { sql: 'mat_browser = ?', params: ['Chrome'] },
      groupBy: null, orderBy: 'c0 ASC', types: ['String', 'Nullable(String)'],
    },
    rows: [['e1', 'Chrome'], ['e3', 'Chrome'], ['e6', 'Chrome']],
  },
  {
    name: 'aggregates', select: ['count()', 'uniq(distinct_id)', 'sum(properties.price)', 'avg(toFloat(properties.price))', 'min(timestamp)', 'max(timestamp)'],
    sql: {
      select: {
        sql: 'count(*) AS c0, count(DISTINCT distinct_id) AS c1, sum(TRY_CAST(json_extract_string(properties, ?) AS DOUBLE)) AS c2, '
          + 'avg(TRY_CAST(json_extract_string(properties, ?) AS DOUBLE)) AS c3, min(timestamp) AS c4, max(timestamp) AS c5',
        params: ['/price', '/price'],
      },
      where: null, groupBy: null, orderBy: 'c0 DESC',
    },
    rows: [[6, 3, 140.5, 35.125, '2024-01-01T10:00:00.000Z', '2024-01-10T12:00:03.000Z']],
  },
  {
    name: 'alias names the column; a date literal is parsed', select: ['toStartOfDay(timestamp) AS day', 'count()'], where: ["timestamp >= '2024-01-08'"],
    sql: {
      select: { sql: "date_trunc('day', timestamp) AS c0, count(*) AS c1", params: [] },
      where: { sql: 'timestamp >= CAST(? AS TIMESTAMP)', params: ['2024-01-08 00:00:00.000000'] },
      groupBy: 'c0', columns: ['day', 'count()'],
    },
    orderBy: 'c0 ASC',
    rows: [['2024-01-08T00:00:00.000Z', 1], ['2024-01-09T00:00:00.000Z', 1], ['2024-01-10T00:00:00.000Z', 2]],
  },
  { name: 'text compared with a number is cast', select: ['event'], where: ['properties.price > 20'], rows: [['$pageview'], ['purchase']] },
  {
    name: 'person properties', select: ['person.properties.email', 'count()'], where: ['person.properties.email IS NOT NULL'],
    sql: {
      select: { sql: 'json_extract_string(person_properties, ?) AS c0, count(*) AS c1', params: ['/email'] },
      where: { sql: 'json_extract_string(person_properties, ?) IS NOT NULL', params: ['/email'] }, groupBy: 'c0',
    },
    rows: [['ann@x.com', 3], ['bob@y.com', 1]],
  },
  {
    name: 'now() and intervals are bound', select: ['uuid'], where: ['timestamp > now() - interval 1 day'],
    sql: { where: { sql: 'timestamp > CAST(? AS TIMESTAMP) - to_days(?)', params: ['2024-01-10 12:00:00.000000', 1] } },
    rows: [['e4'], ['e5'], ['e6']],
  },
  { name: 'quarters are three months', select: ['uuid'], where: ['timestamp > now() - INTERVAL 1 QUARTER'], sql: { where: { sql: 'timestamp > CAST(? AS TIMESTAMP) - to_months(?)', params: ['2024-01-10 12:00:00.000000', 3] } }, rows: [['e1'], ['e2'], ['e3'], ['e4'], ['e5'], ['e6']] },
  {
    name: 'an aggregate in where becomes HAVING', select: ['event', 'count() AS c'], where: ['count() > 1'],
    sql: { where: null, having: { sql: 'count(*) > ?', params: [1] }, groupBy: 'c0', orderBy: 'c1 DESC', columns: ['event', 'c'] },
    rows: [['$pageview', 4]],
  },
  {
    name: 'toStartOfWeek starts on Sunday', select: ['toStartOfWeek(timestamp)', 'count()'],
    sql: { select: { sql: "CAST(date_trunc('week', timestamp + INTERVAL 1 DAY) - INTERVAL 1 DAY AS DATE) AS c0, count(*) AS c1", params: [] } },
    orderBy: 'c0 ASC', rows: [['2023-12-31T00:00:00.000Z', 2], ['2024-01-07T00:00:00.000Z', 4]],
  },
  {
    name: 'nested properties', select: ['properties.nested.x.y'], where: ['properties.nested.x.y IS NOT NULL'],
    sql: { select: { sql: 'json_extract_string(properties, ?) AS c0', params: ['/nested/x/y'] } },
    rows: [['deep'], ['other']],
  },
  {
    name: 'quoted keys', select: ['properties.`a/b`', 'properties."a~b"'], where: ["properties.`a/b` = 'slash'"],
    sql: { select: { sql: 'json_extract_string(properties, ?) AS c0, json_extract_string(properties, ?) AS c1', params: ['/a~1b', '/a~0b'] } },
    rows: [['slash', 'tilde']],
  },
  {
    name: 'IN and NOT IN (a missing value is NOT IN)', select: ['uuid'], where: ["event IN ('signup', 'purchase')", "properties.$browser NOT IN ('Firefox')"],
    sql: { where: { sql: 'event IN (?, ?) AND COALESCE(mat_browser NOT IN (?), TRUE)', params: ['signup', 'purchase', 'Firefox'] } },
    rows: [['e3'], ['e4']],
  },
  { name: 'ILIKE', select: ['uuid'], where: ["properties.$current_url ILIKE '%EXAMPLE.COM/B%'"], rows: [['e5']] },
  { name: 'NOT LIKE keeps backslash escapes', select: ['uuid'], where: ["properties.pct NOT LIKE '50\\%'"], rows: [['e1'], ['e2'], ['e4'], ['e5'], ['e6']] },
  {
    name: 'NOT of a nullable comparison', select: ['uuid'], where: ["not (properties.plan = 'pro')"],
    sql: { where: { sql: 'NOT COALESCE(json_extract_string(properties, ?) = ?, FALSE)', params: ['/plan', 'pro'] } },
    rows: [['e2'], ['e3'], ['e4'], ['e5'], ['e6']],
  },
  {
    name: '!= matches missing values', select: ['uuid'], where: ["properties.plan != 'pro'"],
    sql: { where: { sql: 'json_extract_string(properties, ?) IS DISTINCT FROM ?', params: ['/plan', 'pro'] } },
    rows: [['e2'], ['e3'], ['e4'], ['e5'], ['e6']],
  },
  { name: 'match()', select: ['uuid'], where: ["match(properties.$current_url, '/[ab]$')"], rows: [['e1']] },
  {
    name: 'arithmetic is done in DOUBLE', select: ['uuid', 'properties.price * 2 + 1'], where: ['properties.price > 20'],
    sql: {
      select: { sql: 'uuid AS c0, TRY_CAST(json_extract_string(properties, ?) AS DOUBLE) * CAST(? AS DOUBLE) + CAST(? AS DOUBLE) AS c1', params: ['/price', 2, 1] },
      types: ['String', 'Nullable(Float64)'],
    },
    rows: [['e2', 52], ['e4', 201]],
  },
  { name: 'lower() and grouping', select: ['lower(properties.$browser)', 'count()'], where: ['properties.$browser IS NOT NULL'], orderBy: 'c0 ASC', rows: [['chrome', 3], ['firefox', 1], ['safari', 1]] },
  { name: 'timestamps with fractions and toDateTime', select: ['uuid'], where: ["timestamp > '2024-01-09 23:59:59.4'", "timestamp < toDateTime('2024-01-10')"], rows: [['e4']] },
  { name: 'a boolean compared with text', select: ['uuid'], where: ['properties.flag = true'], sql: { where: { sql: 'json_extract_string(properties, ?) = ?', params: ['/flag', 'true'] } }, rows: [['e3']] },
  {
    name: 'AND binds tighter than OR', select: ['count()'], where: ["1 = 1 AND event = 'signup' OR event = 'purchase'"],
    sql: { where: { sql: '(? = ? AND event = ? OR event = ?)', params: [1, 1, 'signup', 'purchase'] } }, rows: [[2]],
  },
  { name: 'select with filters', select: ['uuid'], filters: { distinct_id: 'u1', after: '2024-01-02' }, rows: [['e3'], ['e6']] },
  { name: 'toDate and toString', select: ['toString(toDate(timestamp))', 'count()'], where: ["toDate(timestamp) = '2024-01-10'"], rows: [['2024-01-10', 2]] },
  { name: 'select booleans are exact', select: ['uuid', "properties.plan = 'pro'"], where: ["event = 'signup'"], rows: [['e3', false]] },
  { name: 'toInt of text', select: ['sum(toInt(properties.price))'], rows: [[141]] },
  { name: 'uniq of a person property', select: ['uniq(person.properties.email)'], rows: [[2]] },
  { name: 'case-insensitive function names', select: ['COUNT()'], where: ["event = 'signup'"], rows: [[1]] },
  {
    name: 'whole JSON columns and elements_chain', select: ['person.properties', 'properties', 'elements_chain'], where: ["uuid = 'e2'"],
    sql: { select: { sql: 'person_properties AS c0, properties AS c1, elements_chain AS c2', params: [] }, types: ['Nullable(String)', 'String', 'String'] },
    rows: [['{"email":"bob@y.com"}', JSON.stringify(FIXTURE_EVENTS[1]?.properties), '']],
  },
  { name: 'person.id is person_id', select: ['person.id'], where: ["event = 'signup'"], sql: { select: { sql: 'person_id AS c0', params: [] } }, rows: [['p1']] },

  { name: 'empty select', select: [], error: { attr: 'select', detail: 'select must not be empty' } },
  { name: 'unbalanced parenthesis', select: ['uuid'], where: ['(1'], error: { attr: 'where', detail: 'Unexpected end of expression at position 2 of where[0]' } },
  { name: 'stray closing parenthesis', select: ['uuid'], where: ["event = 'x' )"], error: { attr: 'where', detail: "Unexpected token ')' at position 12 of where[0]" } },
  { name: "'*' is not a column", select: ['*'], error: { attr: 'select', detail: "Unexpected token '*' at position 0 of select[0]" } },
  { name: 'nested aggregates', select: ['sum(count())'], error: { attr: 'select', detail: 'Aggregate functions cannot be nested at position 4 of select[0]' } },
  { name: 'aggregate mixed with a field', select: ['count() + properties.price'], error: { attr: 'select', detail: 'Expression mixes aggregate functions with fields outside them at position 8 of select[0]' } },
  { name: 'HAVING without aggregates', select: ['event'], where: ['count() > 1'], error: { attr: 'where', detail: 'An aggregate in where needs an aggregate in select at position 8 of where[0]' } },
  { name: 'where must be boolean', select: ['uuid'], where: ['properties.price'], error: { attr: 'where', detail: 'Expected a boolean expression, got String at position 0 of where[0]' } },
  { name: 'bad DateTime literal', select: ['uuid'], where: ["timestamp > 'yesterday'"], error: { attr: 'where', detail: "Cannot parse 'yesterday' as a DateTime at position 10 of where[0]" } },
  { name: 'DateTime compared with a number', select: ['uuid'], where: ['timestamp > 5'], error: { attr: 'where', detail: 'Expected a DateTime, got Integer at position 10 of where[0]' } },
  { name: 'LIKE needs a literal pattern', select: ['uuid'], where: ['event LIKE distinct_id'], error: { attr: 'where', detail: 'LIKE needs a string literal as its pattern at position 11 of where[0]' } },
  { name: 'LIKE pattern ending in a backslash', select: ['uuid'], where: ["event LIKE 'a\\\\'"], error: { attr: 'where', detail: 'LIKE pattern must not end with a lone backslash at position 11 of where[0]' } },
  { name: 'invalid match() pattern', select: ["match(event, '[')"], error: { attr: 'select', detail: 'Invalid regular expression (missing ]) at position 0 of select[0]' } },
  { name: 'wrong argument count', select: ['count(1, 2)'], error: { attr: 'select', detail: "Function 'count' takes 0 to 1 arguments, got 2 at position 0 of select[0]" } },
  { name: 'star outside count', select: ['sum(*)'], error: { attr: 'select', detail: "Function 'sum' does not accept * at position 0 of select[0]" } },
  { name: 'DateTime minus DateTime', select: ['timestamp - timestamp'], error: { attr: 'select', detail: "Cannot apply '-' to DateTime and DateTime at position 10 of select[0]" } },
  { name: 'toInt of a DateTime', select: ['toInt(timestamp)'], error: { attr: 'select', detail: 'Expected a number or text, got DateTime at position 0 of select[0]' } },
  { name: 'unknown interval unit', select: ['now() - interval 1 fortnight'], error: { attr: 'select', detail: "Unknown interval unit 'fortnight' at position 19 of select[0]" } },
  { name: 'number out of range', select: ['uuid'], where: ['properties.price = 1e999'], error: { attr: 'where', detail: "Number out of range '1e999' at position 19 of where[0]" } },
];

const d = (n: number, s: string) => s.repeat(n);

const PROBES: QueryCase[] = [
  { name: 'OR 1=1 stays inside the team', select: ['count()'], where: ["event = 'x' OR 1=1"], rows: [[6]] },
  { name: 'closing the scope parenthesis', select: ['count()'], where: ['1=1) OR (team_id = 2'], error: { attr: 'where', detail: "Unexpected token ')' at position 3 of where[0]" } },
  { name: 'statement separator', select: ['uuid'], where: ["event = 'x'; DROP TABLE events"], error: { attr: 'where', detail: "Unexpected character ';' at position 11 of where[0]" } },
  { name: 'UNION SELECT', select: ['uuid'], where: ["event = 'x' UNION SELECT * FROM events"], error: { attr: 'where', detail: "Unsupported keyword 'UNION' at position 12 of where[0]" } },
  { name: 'subquery', select: ['(SELECT 1)'], error: { attr: 'select', detail: "Unsupported keyword 'SELECT' at position 1 of select[0]" } },
  { name: 'subquery in IN', select: ['uuid'], where: ['uuid IN (SELECT uuid FROM events)'], error: { attr: 'where', detail: "Unsupported keyword 'SELECT' at position 9 of where[0]" } },
  { name: 'read_csv', select: ["read_csv('/etc/passwd')"], error: { attr: 'select', detail: "Unknown function 'read_csv' at position 0 of select[0]" } },
  { name: 'read_parquet in where', select: ['uuid'], where: ["read_parquet('x') IS NULL"], error: { attr: 'where', detail: "Unknown function 'read_parquet' at position 0 of where[0]" } },
  { name: 'glob', select: ["glob('/*')"], error: { attr: 'select', detail: "Unknown function 'glob' at position 0 of select[0]" } },
  { name: 'getenv', select: ["getenv('HOME')"], error: { attr: 'select', detail: "Unknown function 'getenv' at position 0 of select[0]" } },
  { name: 'query()', select: ["query('SELECT 1')"], error: { attr: 'select', detail: "Unknown function 'query' at position 0 of select[0]" } },
  { name: 'current_setting', select: ["current_setting('TimeZone')"], error: { attr: 'select', detail: "Unknown function 'current_setting' at position 0 of select[0]" } },
  { name: 'pragma table function', select: ['uuid'], where: ["pragma_table_info('events') IS NULL"], error: { attr: 'where', detail: "Unknown function 'pragma_table_info' at position 0 of where[0]" } },
  { name: 'COPY', select: ["COPY events TO '/tmp/x'"], error: { attr: 'select', detail: "Unsupported keyword 'COPY' at position 0 of select[0]" } },
  { name: 'ATTACH', select: ['uuid'], where: ["ATTACH '/tmp/x' AS y"], error: { attr: 'where', detail: "Unsupported keyword 'ATTACH' at position 0 of where[0]" } },
  { name: 'team_id is not in the catalog', select: ['uuid'], where: ['team_id = 2'], error: { attr: 'where', detail: "Unknown field 'team_id' at position 0 of where[0]" } },
  { name: 'team_id quoted', select: ['uuid'], where: ['`team_id` = 2'], error: { attr: 'where', detail: "Unknown field 'team_id' at position 0 of where[0]" } },
  { name: 'team_id selected', select: ['toString(team_id)'], error: { attr: 'select', detail: "Unknown field 'team_id' at position 9 of select[0]" } },
  { name: 'materialized columns are not in the catalog', select: ['mat_browser'], error: { attr: 'select', detail: "Unknown field 'mat_browser' at position 0 of select[0]" } },
  { name: 'line comment', select: ['uuid'], where: ["event = '\\'' OR 1=1 --'"], error: { attr: 'where', detail: 'Comments are not allowed at position 20 of where[0]' } },
  { name: 'block comment', select: ['uuid'], where: ["event = 'x' /* c */"], error: { attr: 'where', detail: 'Comments are not allowed at position 12 of where[0]' } },
  { name: 'placeholder in the expression', select: ['uuid'], where: ['event = ?'], error: { attr: 'where', detail: "Unexpected character '?' at position 8 of where[0]" } },
  { name: 'doubled quote in a string', select: ['uuid'], where: ["event = 'it''s'"], sql: { where: { sql: 'event = ?', params: ["it's"] } }, rows: [] },
  { name: 'escaped quote and backslashes', select: ['uuid'], where: ["event = '\\' OR \\'1\\'=\\'1'"], sql: { where: { sql: 'event = ?', params: ["' OR '1'='1"] } }, rows: [] },
  { name: 'unicode and NUL in a string', select: ['uuid'], where: ["event = 'ü\u0000😀\\\\'"], rows: [] },
  { name: 'unterminated string', select: ['uuid'], where: ["event = 'x"], error: { attr: 'where', detail: 'Unterminated string literal at position 8 of where[0]' } },
  { name: 'SQL in a quoted key', select: ['uuid'], where: ['properties."\'; DROP TABLE events; --" IS NOT NULL'], rows: [] },
  { name: 'SQL in an alias', select: ['uuid AS "x; DROP TABLE events"'], where: ["event = 'signup'"], sql: { select: { sql: 'uuid AS c0', params: [] }, columns: ['x; DROP TABLE events'] }, rows: [['e3']] },
  { name: 'huge number', select: ['uuid'], where: ['properties.price > 99999999999999999999999999'], sql: { where: { sql: 'TRY_CAST(json_extract_string(properties, ?) AS DOUBLE) > CAST(? AS DOUBLE)', params: ['/price', '1e+26'] } }, rows: [] },
  { name: 'huge negative number', select: ['count()'], where: ['properties.price > -99999999999999999999999999'], rows: [[4]] },
  { name: 'huge arithmetic is Infinity, not an error', select: ['count()'], where: ['properties.price * 1e308 * 1e308 > 0'], rows: [[4]] },
  { name: 'integer overflow avoided', select: ['count() * 9007199254740991 * 9007199254740991'], rows: [[6 * 9007199254740991 * 9007199254740991]] },
  { name: 'division by zero is Infinity (as in ClickHouse), not an error', select: ['count()'], where: ['properties.price / 0 > 1'], rows: [[4]] },
  { name: 'deep parentheses', select: ['uuid'], where: [`${d(100, '(')}1=1${d(100, ')')}`], error: { attr: 'where', detail: 'Expression is nested too deeply at position 32 of where[0]' } },
  { name: 'deep NOT', select: ['uuid'], where: [`${d(100, 'NOT ')}1=1`], error: { attr: 'where', detail: 'Expression is nested too deeply at position 128 of where[0]' } },
  { name: 'deep unary minus', select: [`${d(100, '- ')}1`], error: { attr: 'select', detail: 'Expression is nested too deeply at position 64 of select[0]' } },
  { name: 'deep function nesting', select: [`${d(100, 'lower(')}event${d(100, ')')}`], error: { attr: 'select', detail: 'Expression is nested too deeply at position 192 of select[0]' } },
  { name: 'chain of additions', select: ['count()'], where: [`1${d(30, ' + 1')} = 31`], rows: [[6]] },
  { name: 'long chain of additions', select: ['count()'], where: [`1${d(400, ' + 1')} = 401`], error: { attr: 'where', detail: 'Expression is nested too deeply at position 126 of where[0]' } },
  { name: 'long chain of ORs', select: ['count()'], where: [d(200, "event = 'nope' OR ").concat('false')], rows: [[0]] },
  { name: 'too many tokens', select: ['uuid'], where: [d(600, '1 + ').concat('1 = 1')], error: { attr: 'where', detail: 'Expression has more than 1000 tokens at position 2000 of where[0]' } },
  { name: 'too long', select: ['uuid'], where: [`event = '${d(10_001, 'a')}'`], error: { attr: 'where', detail: 'Expression where[0] is longer than 10000 characters' } },
  { name: 'interval overflow', select: ['now() + interval 10001 year'], error: { attr: 'select', detail: 'Intervals add up to more than 10000 years at position 8 of select[0]' } },
  { name: 'interval sum overflow', select: ['now() + interval 6000 year + interval 6000 year'], error: { attr: 'select', detail: 'Intervals add up to more than 10000 years at position 29 of select[0]' } },
  { name: 'dates far in the past', select: ['count()'], where: ['toDateTime(properties.signup_date) > now() - interval 100 year'], rows: [[3]] },
  { name: 'SQL in event', filters: { event: "'; DROP TABLE events; --" }, sql: { filters: { sql: `event = ? AND ${BEFORE}`, params: ["'; DROP TABLE events; --", BP] } }, uuids: [] },
  { name: 'SQL in distinct_id', filters: { distinct_id: "u1' OR '1'='1" }, uuids: [] },
  { name: 'SQL in person_id', filters: { person_id: "p1') OR team_id = 2 --" }, uuids: [] },
  { name: 'SQL in after', filters: { after: "2024-01-01'; DROP TABLE events" }, error: { attr: 'after', detail: "Invalid date '2024-01-01'; DROP TABLE events': use ISO 8601 or a relative date such as -7d, -24h or -1m" } },
  { name: 'SQL in a property key', filters: props([{ key: "$browser' OR 1=1 --", value: 'Chrome' }]), uuids: [] },
  { name: 'SQL in a property value', filters: props([{ key: '$browser', value: "x' OR '1'='1" }]), uuids: [] },
  { name: 'JSONPath-looking key stays a pointer', filters: props([{ key: '$.plan', value: 'pro' }]), sql: { filters: { sql: `${BEFORE} AND json_extract_string(properties, ?) = ?`, params: [BP, '/$.plan', 'pro'] } }, uuids: [] },
  { name: '__proto__ as a key', filters: props([{ key: '__proto__', value: 'x' }]), uuids: [] },
  { name: 'hogql filter reaching for team_id', filters: props([{ key: 'team_id = 2', type: 'hogql' }]), error: { attr: 'properties', detail: "Unknown field 'team_id' at position 0 of properties[0].key" } },
  { name: 'hogql filter with a subquery', filters: props([{ key: '1 IN (SELECT 1)', type: 'hogql' }]), error: { attr: 'properties', detail: "Unsupported keyword 'SELECT' at position 6 of properties[0].key" } },
  { name: 'a non-finite number value', filters: { properties: '[{"key":"price","operator":"gt","value":1e400}]' }, error: { attr: 'properties', detail: 'Invalid property filter at properties[0]: values must be finite numbers' } },
  { name: 'a huge number value', filters: props([{ key: 'price', operator: 'lt', value: -1e308 }]), uuids: [] },
  { name: 'deeply nested groups', filters: props(Array.from({ length: 50 }).reduce<unknown>((inner) => ({ type: 'AND', values: [inner] }), { key: 'a', value: 'b' })), error: { attr: 'properties', detail: 'Invalid property filter at properties.values[0].values[0].values[0].values[0].values[0].values[0].values[0].values[0].values[0].values[0].values[0]: property groups are nested more than 10 deep' } },
  { name: 'deeply nested JSON', filters: { properties: d(100_000, '[') }, error: { attr: 'properties', detail: 'Properties are unparsable!' } },
  { name: 'too many filters', filters: props(Array.from({ length: 201 }, () => ({ key: 'a', value: 'b' }))), error: { attr: 'properties', detail: 'Invalid property filter at properties[200]: more than 200 property filters' } },
  { name: 'RE2 has no catastrophic backtracking', filters: props([{ key: '$current_url', value: '^(a+)+$', operator: 'regex' }]), uuids: [] },
  { name: 'a filter value with a LIKE wildcard', filters: props([{ key: '$browser', value: '%', operator: 'icontains' }]), uuids: [] },
  { name: 'unicode whitespace is not whitespace', select: ['uuid'], where: ["event\u00a0= 'x'"], error: { attr: 'where', detail: "Unexpected character '\u00a0' at position 5 of where[0]" } },
];

export const CASES: QueryCase[] = [...FILTER_CASES, ...SELECT_CASES, ...PROBES.map((c): QueryCase => ({ ...c, probe: true }))];

/** parseRelativeOrIsoDate: [input, expected UTC text or null for a 400, optional now]. */
export const DATE_CASES: Array<[string, string | null, string?]> = [
  ['2024-01-01', '2024-01-01 00:00:00.000000'],
  ['2024-01-01T10:00', '2024-01-01 10:00:00.000000'],
  ['2024-01-01T10:00:00Z', '2024-01-01 10:00:00.000000'],
  ['2024-01-01 10:00:00', '2024-01-01 10:00:00.000000'],
  ['2024-01-01T10:00:00+02:00', '2024-01-01 08:00:00.000000'],
  ['2024-01-01T10:00:00.123456-05:30', '2024-01-01 15:30:00.123456'],
  ['2020-12-30T12:03:53.829294+00:00', '2020-12-30 12:03:53.829294'],
  ['2020-12-30T12:03:53.829294 00:00', '2020-12-30 12:03:53.829294'],
  ['2020-12-30T12:03:53.1234567891Z', null],
  ['2020-12-30T12:03:53.123456789Z', '2020-12-30 12:03:53.123456'],
  ['2021-1-1', '2021-01-01 00:00:00.000000'],
  ['0099-06-01', '0099-06-01 00:00:00.000000'],
  ['-7d', '2024-01-03 12:00:00.000000'],
  ['7d', '2024-01-03 12:00:00.000000'],
  ['-24h', '2024-01-09 12:00:00.000000'],
  ['-1w', '2024-01-03 12:00:00.000000'],
  ['-1m', '2023-12-10 12:00:00.000000'],
  ['-30M', '2024-01-10 11:30:00.000000'],
  ['-1q', '2023-10-11 12:00:00.000000'],
  ['-1y', '2023-01-10 12:00:00.000000'],
  ['-1dStart', '2024-01-09 00:00:00.000000'],
  ['-1dEnd', '2024-01-09 23:59:59.999999'],
  ['dStart', '2024-01-10 00:00:00.000000'],
  ['-1hStart', '2024-01-10 11:00:00.000000'],
  ['-1mStart', '2023-12-01 12:00:00.000000'],
  ['-1mEnd', '2023-12-31 12:00:00.000000'],
  ['-1yStart', '2023-01-01 12:00:00.000000'],
  ['-1m', '2024-02-29 00:00:00.000000', '2024-03-31T00:00:00Z'],
  ['-1y', '2023-02-28 00:00:00.000000', '2024-02-29T00:00:00Z'],
  ['yesterday', null],
  ['2024-13-01', null],
  ['2024-02-30', null],
  ['2024-01-01T25:00', null],
  ['now', null],
  ['-7x', null],
  ['1704103200', null],
  ['-99999999y', null],
  ['-7 d', null],
  ['0000-01-01', null],
];

/** checkRe2Syntax: [pattern, valid]; duckdb.test.ts checks every row against DuckDB's own RE2. */
export const REGEX_CASES: Array<[string, boolean]> = [
  ['', true], ['abc', true], ['(?i)ABC', true], ['(?P<n>a)', true], ['\\_', true], ['\\-', true], ['\\12', true],
  ['[]a]', true], ['[^]a]', true], ['\\pN', true], ['\\p{Greek}', true], ['\\P{^Latin}', true], ['[[:alpha:]]', true],
  ['a*?', true], ['\\Qa.b', true], ['(?i-s:a)', true], ['^*', true], ['[a-]', true], ['a{,3}', true], ['\\d+\\.\\d+', true],
  ['(a{10}){100}', true], ['\\x41\\x{263a}', true], ['[\\d\\s]', true], ['a|b|', true], ['()', true], ['^https://example\\.com/[ab]', true],
  ['a{2,}', true], ['a{2,5}?', true], ['\\A\\z', true], ['[\\]]', true], ['\\0', true], ['(?U)a+', true], ['(?)', true], ['a(?i)*', true],
  ['(?=a)', false], ['[', false], ['(?<n>a)', false], ['\\1', false], ['[\\b]', false], ['a{1001}', false], ['\\p{Foo}', false],
  ['[[:foo:]]', false], ['(?P=n)', false], ['a**', false], ['(a{100}){100}', false], ['[a-\\d]', false], ['\\é', false],
  ['(?-)', false], ['x{2}{3}', false], ['\\8', false], ['\\x{110000}', false], ['\\xZZ', false], ['a|*', false],
  ['[z-a]', false], ['(', false], [')', false], ['a\\', false], ['*', false], ['(?#c)', false], ['a{3,2}', false],
  ['\\Z', false], ['\\k<n>', false], ['(*)', false],
];
