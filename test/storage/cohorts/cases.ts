import { parseFilters } from '../../../src/core/cohorts/parse-definition';

/**
 * The cohort conditions and the persons of fixture.ts each matches, shared by the DuckDB tests
 * (compile-cohort.test.ts) and the ClickHouse ones (clickhouse.test.ts).
 */

export type Raw = Record<string, unknown>;
export const all = (...values: Raw[]) => parseFilters({ properties: { type: 'AND', values } });
export const person = (key: string, operator: string, value?: unknown, negation = false) => ({ type: 'person', key, operator, value, negation });
export const performed = (key: string, time_value: number, time_interval = 'day', extra: Raw = {}) => ({
  type: 'behavioral',
  value: 'performed_event',
  event_type: 'events',
  key,
  time_value,
  time_interval,
  ...extra,
});

export const PERSON_CASES: Array<[string, Raw, string[]]> = [
  ['exact', person('email', 'exact', 'alice@example.com'), ['alice']],
  ['exact ignores case', person('email', 'exact', 'ALICE@EXAMPLE.COM'), ['alice']],
  ['exact list', person('email', 'exact', ['bob@test.org', 'carol@example.com']), ['bob', 'carol']],
  ['exact number against a number', person('age', 'exact', 31), ['alice']],
  ['exact number against text', person('age', 'exact', 25), ['bob']],
  ['exact boolean', person('beta', 'exact', true), ['alice']],
  ['exact "false" by truthiness', person('beta', 'exact', 'false'), ['bob']],
  ['is_not includes missing and null', person('plan', 'is_not', 'pro'), ['bob', 'carol', 'dave']],
  ['icontains', person('email', 'icontains', 'EXAMPLE'), ['alice', 'carol']],
  ['not_icontains includes missing', person('email', 'not_icontains', 'example'), ['bob', 'dave']],
  ['regex', person('email', 'regex', '^[ab]'), ['alice', 'bob']],
  ['regex with an inline flag', person('email', 'regex', '(?i)^ALICE'), ['alice']],
  ['not_regex', person('email', 'not_regex', 'example\\.com$'), ['bob', 'dave']],
  ['invalid regex matches nobody', person('email', 'regex', '('), []],
  ['invalid not_regex matches nobody', person('email', 'not_regex', '('), []],
  ['gt', person('age', 'gt', 30), ['alice', 'carol']],
  ['gte with numeric text', person('age', 'gte', '25'), ['alice', 'bob', 'carol']],
  ['lt', person('age', 'lt', 31), ['bob']],
  ['lte', person('age', 'lte', 31), ['alice', 'bob']],
  ['gt of a non-number', person('age', 'gt', 'abc'), []],
  ['is_set counts null values', person('plan', 'is_set'), ['alice', 'bob', 'carol']],
  ['is_not_set', person('plan', 'is_not_set'), ['dave']],
  ['is_date_before (text and epoch seconds)', person('signup', 'is_date_before', '2024-01-01'), ['bob', 'carol']],
  ['is_date_after relative', person('signup', 'is_date_after', '-90d'), ['alice']],
  ['is_date_before of a non-date', person('signup', 'is_date_before', 'soon'), []],
  ['a key with a slash', person('a/b', 'exact', 'slash'), ['alice']],
  ['a key starting with $', person('$browser', 'exact', 'Chrome'), ['alice']],
  ['a key with a tilde', person('x~y', 'exact', 'tilde'), ['alice']],
  ['negation', person('plan', 'exact', 'pro', true), ['bob', 'carol', 'dave']],
];

export const BEHAVIOUR_CASES: Array<[string, Raw, string[]]> = [
  ['in the last 7 days (any distinct id of the person)', performed('$pageview', 7), ['alice']],
  ['in the last 30 days', performed('$pageview', 30), ['alice', 'bob']],
  ['in the last 2 months', performed('$pageview', 2, 'month'), ['alice', 'bob', 'dave']],
  ['in the last 12 hours: nobody', performed('$pageview', 12, 'hour'), []],
  ['negated', performed('$pageview', 30, 'day', { negation: true }), ['carol', 'dave']],
  ['at least twice', performed('$pageview', 7, 'day', { value: 'performed_event_multiple', operator: 'gte', operator_value: 2 }), ['alice']],
  ['at most once', performed('$pageview', 30, 'day', { value: 'performed_event_multiple', operator: 'lte', operator_value: 1 }), ['bob']],
  ['exactly three times', performed('$pageview', 30, 'day', { value: 'performed_event_multiple', operator: 'exact', operator_value: 3 }), ['alice']],
  ['with an event property filter', performed('purchase', 30, 'day', { event_filters: [{ type: 'event', key: 'amount', operator: 'gt', value: 10 }] }), ['carol']],
  ['with an event property filter nobody meets', performed('purchase', 30, 'day', { event_filters: [{ type: 'event', key: 'amount', operator: 'gt', value: 100 }] }), []],
];
