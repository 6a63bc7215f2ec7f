import { describe, expect, test } from 'bun:test';
import { cohortDefinition, filtersRepresentation } from '../../../src/core/cohorts/definition';
import { normalizeLegacyGroups } from '../../../src/core/cohorts/legacy-groups';
import { parseFilters } from '../../../src/core/cohorts/parse-definition';
import { parseFilterDate, windowStart } from '../../../src/core/cohorts/time-window';
import { referencedCohorts } from '../../../src/core/cohorts/types';

const invalid = (detail: string, attr: string) => expect.objectContaining({ kind: 'invalid_input', detail, attr });

const catchError = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error');
};

describe('filters are validated into one definition', () => {
  test('a full definition keeps its shape, with defaults filled in', () => {
    expect(
      parseFilters({
        properties: {
          type: 'OR',
          values: [
            { type: 'AND', values: [{ type: 'person', key: 'email', value: 'a@b.c' }] },
            { type: 'behavioral', value: 'performed_event', key: '$pageview', time_value: '30', time_interval: 'day' },
            { type: 'cohort', key: 'id', value: '12', negation: true },
          ],
        },
      }),
    ).toEqual({
      type: 'OR',
      values: [
        { type: 'AND', values: [{ type: 'person', key: 'email', value: 'a@b.c', operator: 'exact', negation: false }] },
        { type: 'behavioral', value: 'performed_event', key: '$pageview', event_type: 'events', time_value: 30, time_interval: 'day', negation: false },
        { type: 'cohort', key: 'id', value: 12, negation: true },
      ],
    });
  });

  test.each([
    [{}, invalid("Must contain a 'properties' key with type and values", 'filters')],
    [{ properties: { type: 'AND', values: 'x' } }, invalid('A AND group needs a list of values.', 'filters')],
    [{ properties: [{ type: 'person', value: 1 }] }, invalid('Missing required keys for person filter: key', 'filters')],
    [{ properties: [{ type: 'person', key: 'a', operator: 'exact' }] }, invalid('Missing required keys for person filter: value', 'filters')],
    [{ properties: [{ type: 'person', key: 'a', operator: 'semver_gt', value: '1' }] }, invalid('Operator "semver_gt" is not supported in cohorts.', 'filters')],
    [{ properties: [{ type: 'event', key: 'a', value: 1 }] }, invalid('Filters of type "event" are not supported in cohorts.', 'filters')],
    [{ properties: [{ type: 'behavioral', value: 'stopped_performing_event', key: 'x' }] }, invalid('Behavioral filter "stopped_performing_event" is not supported.', 'filters')],
    [{ properties: [{ type: 'behavioral', value: 'performed_event', key: 3, event_type: 'actions' }] }, invalid('Behavioral filters on actions are not supported.', 'filters')],
    [{ properties: [{ type: 'behavioral', value: 'performed_event', key: 'x', time_interval: 'day' }] }, invalid('Missing required keys for behavioral filter: time_value', 'filters')],
    [{ properties: [{ type: 'behavioral', value: 'performed_event', key: 'x', time_value: 3, time_interval: 'fortnight' }] }, invalid('Missing required keys for behavioral filter: time_interval', 'filters')],
    [{ properties: [{ type: 'cohort', key: 'id', value: 'abc' }] }, invalid('Missing required keys for cohort filter: value', 'filters')],
  ])('%j is refused', (filters, expected) => {
    expect(catchError(() => parseFilters(filters))).toEqual(expected);
  });

  test('referenced cohorts are collected once', () => {
    const definition = parseFilters({ properties: [{ type: 'cohort', key: 'id', value: 3 }, { type: 'cohort', key: 'id', value: 3 }, { type: 'precalculated-cohort', key: 'id', value: 4 }] });
    expect(referencedCohorts(definition)).toEqual([3, 4]);
  });
});

describe('legacy groups', () => {
  test('are stored with every key of PostHog Group.to_dict()', () => {
    expect(normalizeLegacyGroups([{ event_id: '$pageview', days: 7 }])).toEqual([
      { properties: null, action_id: null, event_id: '$pageview', label: null, days: 7, count: null, count_operator: null, start_date: null, end_date: null },
    ]);
    expect(normalizeLegacyGroups({})).toEqual([]);
  });

  test.each([
    [[{ days: 3 }], 'Cohort group needs properties or action_id or event_id'],
    [[{ action_id: 3, days: 3 }], 'Cohort groups on actions are not supported.'],
    ['nope', 'Groups must be a list of groups.'],
  ])('%j is refused', (groups, detail) => {
    expect(catchError(() => normalizeLegacyGroups(groups))).toEqual(invalid(detail, 'groups'));
  });

  test('are shown as filters when the cohort has none', () => {
    const groups = [{ properties: [{ key: 'plan', value: 'pro' }] }, { event_id: 'buy', days: 7 }];
    expect(filtersRepresentation(null, groups)).toEqual({
      properties: {
        type: 'OR',
        values: [
          { type: 'AND', values: [{ type: 'person', key: 'plan', value: 'pro', operator: 'exact', negation: false }] },
          { type: 'AND', values: [{ type: 'behavioral', key: 'buy', value: 'performed_event', event_type: 'events', time_value: 7, time_interval: 'day', negation: false }] },
        ],
      },
    });
    expect(filtersRepresentation(null, [])).toEqual({ properties: {} });
    expect(filtersRepresentation({ properties: { type: 'AND', values: [] } }, groups)).toEqual({ properties: { type: 'AND', values: [] } });
    expect(cohortDefinition({}, [])).toEqual({ type: 'AND', values: [] });
  });
});

describe('time', () => {
  const now = new Date('2024-03-31T12:00:00.000Z');
  test.each([
    [1, 'hour', '2024-03-31T11:00:00.000Z'],
    [2, 'day', '2024-03-29T12:00:00.000Z'],
    [1, 'week', '2024-03-24T12:00:00.000Z'],
    [1, 'month', '2024-02-29T12:00:00.000Z'],
    [1, 'year', '2023-03-31T12:00:00.000Z'],
  ] as const)('the last %d %s starts at %s', (value, interval, expected) => {
    expect(windowStart(now, value, interval).toISOString()).toBe(expected);
  });

  test.each([
    ['-7d', '2024-03-24T12:00:00.000Z'],
    ['2024-01-02', '2024-01-02T00:00:00.000Z'],
    ['2024-01-02 03:04', '2024-01-02T03:04:00.000Z'],
    ['2024-01-02T03:04:05+02:00', '2024-01-02T01:04:05.000Z'],
    ['yesterday', null],
    [5, null],
  ])('filter date %j', (value, expected) => {
    expect(parseFilterDate(value, now)?.toISOString() ?? null).toBe(expected);
  });
});
