import { describe, expect, test } from 'bun:test';
import { validateFlagFilters, validateFlagKey } from '../../../src/core/flags/validate-flag';
import { AppError } from '../../../src/errors';

const errorOf = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    if (error instanceof AppError) return { kind: error.kind, detail: error.detail, attr: error.attr };
    throw error;
  }
  throw new Error('expected an AppError');
};

const filtersError = (detail: string) => ({ kind: 'invalid_input' as const, detail, attr: 'filters' });

const variants = (...percentages: number[]) => ({
  variants: percentages.map((rollout_percentage, index) => ({ key: `v${index}`, rollout_percentage })),
});

const withProperty = (property: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  groups: [{ properties: [{ key: 'k', type: 'person', ...property }], rollout_percentage: null }],
  ...extra,
});

describe('validateFlagKey', () => {
  test.each(['beta-feature', 'beta_feature', 'Beta2', '-_'])('%p is a valid key', (key) => {
    expect(validateFlagKey(key)).toBe(key);
  });

  test.each(['beta feature', 'beta.feature', 'bêta', 'a/b', 5])('%p is rejected', (key) => {
    expect(errorOf(() => validateFlagKey(key))).toEqual({
      kind: 'invalid_input',
      detail: 'Only letters, numbers, hyphens (-) & underscores (_) are allowed.',
      attr: 'key',
    });
  });

  test.each([[undefined], [null], ['']])('%p is required', (key) => {
    expect(errorOf(() => validateFlagKey(key))).toEqual({ kind: 'required', detail: 'This field is required.', attr: 'key' });
  });
});

describe('validateFlagFilters accepts and normalizes', () => {
  test('a simple rollout flag, with payloads as JSON text', () => {
    expect(validateFlagFilters({ groups: [{ properties: [], rollout_percentage: 50 }], payloads: { true: { a: 1 } } })).toEqual({
      groups: [{ properties: [], rollout_percentage: 50 }],
      payloads: { true: '{"a":1}' },
    });
  });

  test('a multivariate flag with an override and variant payloads', () => {
    const filters = {
      groups: [{ properties: [{ key: 'email', type: 'person', value: '@x.com', operator: 'icontains' }], variant: 'v1' }],
      multivariate: variants(50, 50),
      payloads: { v0: '"zero"', v1: 1 },
    };
    expect<unknown>(validateFlagFilters(filters)).toEqual({ ...filters, payloads: { v0: '"zero"', v1: '1' } });
  });

  test('operator aliases min/max become gte/lte', () => {
    const result = validateFlagFilters(withProperty({ value: '5', operator: 'min' }));
    expect(result.groups[0].properties?.[0].operator).toBe('gte');
  });

  test('group flags with group properties of their own type', () => {
    const filters = {
      aggregation_group_type_index: 1,
      groups: [{ properties: [{ key: 'plan', type: 'group', group_type_index: 1, value: 'x' }] }],
    };
    expect<unknown>(validateFlagFilters(filters)).toEqual({ ...filters, payloads: {} });
  });

  test('does not change its input', () => {
    const filters = { groups: [], payloads: { true: 5 } };
    validateFlagFilters(filters);
    expect(filters).toEqual({ groups: [], payloads: { true: 5 } });
  });

  test.each([
    ['a float sum of exactly 100', variants(33.5, 33.5, 33)],
    ['an empty multivariate object is no multivariate', {}],
  ])('%s', (_name, multivariate) => {
    expect(() => validateFlagFilters({ groups: [], multivariate })).not.toThrow();
  });
});

describe('validateFlagFilters rejects', () => {
  test.each([
    ['filters that are not an object', [], 'Filters must be an object.'],
    ['missing groups', {}, 'Filters are not valid (groups must be a list)'],
    ['a rollout above 100', { groups: [{ rollout_percentage: 101 }] }, 'Ensure this value is less than or equal to 100.'],
    ['a negative rollout', { groups: [{ rollout_percentage: -1 }] }, 'Ensure this value is greater than or equal to 0.'],
    ['a rollout given as text', { groups: [{ rollout_percentage: '50' }] }, 'A valid number is required.'],
    [
      'variants summing to 110',
      { groups: [], multivariate: variants(50, 25, 35) },
      'Invalid variant definitions: Variant rollout percentages must sum to 100.',
    ],
    [
      'variants summing to 75',
      { groups: [], multivariate: variants(50, 25, 0) },
      'Invalid variant definitions: Variant rollout percentages must sum to 100.',
    ],
    [
      'duplicate variant keys',
      { groups: [], multivariate: { variants: [{ key: 'a', rollout_percentage: 50 }, { key: 'a', rollout_percentage: 50 }] } },
      'Invalid variant definitions: Variant keys must be unique.',
    ],
    [
      'an override that is not a variant',
      { groups: [{ variant: 'nope' }], multivariate: variants(100) },
      'Filters are not valid (variant override does not exist)',
    ],
    ['an unknown operator', withProperty({ value: 'x', operator: 'sounds_like' }), 'Invalid operator: sounds_like'],
    ['an operator flags do not support', withProperty({ value: [1, 2], operator: 'between' }), 'Unsupported operator for feature flags: between'],
    ['a numeric value for icontains', withProperty({ value: 5, operator: 'icontains' }), 'Invalid value for operator icontains: 5'],
    ['a numeric value for gt', withProperty({ value: 5, operator: 'gt' }), 'Invalid value for operator gt: 5'],
    ['a list value for regex', withProperty({ value: ['a'], operator: 'regex' }), 'Invalid value for operator regex: ["a"]'],
    ['an invalidFilters date', withProperty({ value: 'someday', operator: 'is_date_after' }), 'Invalid date value: someday'],
    ['in on a person property', withProperty({ value: 1, operator: 'in' }), "The 'in' operator is only valid for cohort properties, not 'person' properties."],
    ['a non-text semver', withProperty({ value: 1, operator: 'semver_gt' }), 'Invalid value for operator semver_gt: expected a semver string'],
    ['an invalidFilters semver', withProperty({ value: 'one', operator: 'semver_eq' }), 'Invalid semver value for operator semver_eq: one'],
    ['an invalidFilters semver wildcard', withProperty({ value: '1.*.3', operator: 'semver_wildcard' }), 'Invalid semver value for operator semver_wildcard: 1.*.3'],
    ['icontains_multi without a list', withProperty({ value: 'a', operator: 'icontains_multi' }), 'icontains_multi operator requires a list of values'],
    [
      'event properties in a person flag',
      withProperty({ type: 'event', value: 'x' }),
      'Filters are not valid (person-aggregated conditions can only use person, cohort, and flag properties)',
    ],
    [
      'a flag dependency without flag_evaluates_to',
      withProperty({ key: '1', type: 'flag', value: true, operator: 'exact' }),
      "Flag properties must use the 'flag_evaluates_to' operator",
    ],
    [
      'person properties in a group flag',
      withProperty({ value: 'x' }, { aggregation_group_type_index: 0 }),
      'Filters are not valid (group-aggregated conditions can only use group properties)',
    ],
    [
      'group properties of another group type',
      withProperty({ type: 'group', group_type_index: 1, value: 'x' }, { aggregation_group_type_index: 0 }),
      "Filters are not valid (group properties must match the condition set's group type)",
    ],
    ['a property without a key', { groups: [{ properties: [{ value: 'x' }] }] }, 'Filters are not valid (every property needs a key)'],
    ['payloads that are not a dictionary', { groups: [], payloads: ['x'] }, 'Payloads must be passed as a dictionary'],
    ['a payload that is not JSON text', { groups: [], payloads: { true: '{oops' } }, 'Payload value is not valid JSON'],
    ['a boolean flag payload key other than "true"', { groups: [], payloads: { false: '1' } }, "Payload keys must be 'true' for boolean flags"],
    [
      'a multivariate payload key that is not a variant',
      { groups: [], multivariate: variants(100), payloads: { true: '1' } },
      'Payload keys must match a variant key for multivariate flags',
    ],
  ])('%s', (_name, filters, detail) => {
    expect(errorOf(() => validateFlagFilters(filters))).toEqual(filtersError(detail));
  });

  test('property types are checked before the variant sum, as in PostHog', () => {
    const filters = { ...withProperty({ type: 'event', value: 'x' }), multivariate: variants(10) };
    expect(errorOf(() => validateFlagFilters(filters)).detail).toBe(
      'Filters are not valid (person-aggregated conditions can only use person, cohort, and flag properties)',
    );
  });
});
