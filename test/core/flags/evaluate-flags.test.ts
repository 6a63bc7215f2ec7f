import { describe, expect, test } from 'bun:test';
import {
  evaluateFlag,
  evaluateFlags,
  flagNeedsCohorts,
  flagNeedsPersonProperties,
} from '../../../src/core/flags/evaluate-flags';
import type {
  FeatureFlag,
  FlagEvaluationContext,
  FlagFilters,
  FlagReasonCode,
  FlagResult,
} from '../../../src/core/flags/types';

const NOW = new Date('2024-06-15T12:00:00Z');

const flagOf = (key: string, filters: Partial<FlagFilters>, extra: Partial<FeatureFlag> = {}): FeatureFlag => ({
  id: 1,
  key,
  name: key,
  filters: { groups: [{ properties: [], rollout_percentage: null }], ...filters },
  active: true,
  deleted: false,
  ensure_experience_continuity: false,
  ...extra,
});

const ctxOf = (distinctId: string, extra: Partial<FlagEvaluationContext> = {}): FlagEvaluationContext => ({
  distinctId,
  personProperties: {},
  now: NOW,
  ...extra,
});

const matched = (key: string, index: number, variant: string | null = null, payload: unknown = null): FlagResult => ({
  key,
  enabled: true,
  variant,
  payload,
  reason: { code: 'condition_match', condition_index: index, description: `Matched condition set ${index + 1}` },
});

const DESCRIPTIONS: Partial<Record<FlagReasonCode, string>> = {
  no_condition_match: 'No matching condition set',
  out_of_rollout_bound: 'Out of rollout bound',
  no_group_type: 'No group type',
  flag_disabled: 'Feature flag is disabled',
  missing_dependency: 'Flag cannot be evaluated due to missing dependency',
  error: 'Flag evaluation failed',
};

const off = (key: string, code: FlagReasonCode, index: number | null, description = DESCRIPTIONS[code]): FlagResult => ({
  key,
  enabled: false,
  variant: null,
  payload: null,
  reason: { code, condition_index: index, description: description as string },
});

const THREE_VARIANTS = {
  variants: [
    { key: 'first-variant', name: 'First Variant', rollout_percentage: 50 },
    { key: 'second-variant', name: 'Second Variant', rollout_percentage: 25 },
    { key: 'third-variant', name: 'Third Variant', rollout_percentage: 25 },
  ],
};

const FOUR_VARIANTS = {
  variants: ['first', 'second', 'third', 'fourth'].map((name) => ({ key: `${name}-variant`, rollout_percentage: 25 })),
};

const email = (value: unknown, operator = 'exact') => ({ key: 'email', type: 'person' as const, value, operator });

describe('PostHog decide tests (test_feature_flags, _v2, _v2_complex)', () => {
  const tim = ctxOf('example_id', { personProperties: { email: 'tim@posthog.com', realm: 'cloud' } });
  const betaFeature = flagOf('beta-feature', { groups: undefined as never }, { rollout_percentage: 50 });
  const defaultFlag = flagOf('default-flag', { groups: [{ properties: [], rollout_percentage: null }] });
  const legacyByProperty = flagOf(
    'filer-by-property',
    { groups: undefined as never, properties: [email('tim@posthog.com')] },
    { rollout_percentage: 50 },
  );
  const byProperty = flagOf('filer-by-property-2', { groups: [{ properties: [email('tim@posthog.com')] }] });

  test.each([
    ['legacy 50% flag, example_id', betaFeature, tim, matched('beta-feature', 0)],
    ['legacy 50% flag, another_id', betaFeature, ctxOf('another_id'), off('beta-feature', 'out_of_rollout_bound', 0)],
    ['legacy 50% flag, other_id', betaFeature, ctxOf('other_id'), matched('beta-feature', 0)],
    ['default flag', defaultFlag, ctxOf('another_id'), matched('default-flag', 0)],
    ['legacy property flag: matches but hashes 0.9521', legacyByProperty, tim, off('filer-by-property', 'out_of_rollout_bound', 0)],
    ['property flag', byProperty, tim, matched('filer-by-property-2', 0)],
    ['property flag, unknown person', byProperty, ctxOf('another_id'), off('filer-by-property-2', 'no_condition_match', 0)],
  ])('%s', (_name, flag, ctx, expected) => {
    expect(evaluateFlag(flag, ctx)).toEqual(expected);
  });

  test.each([
    ['example_id', 'first-variant'],
    ['other_id', 'third-variant'],
  ])('multivariate-flag 50/25/25 for %s is %s', (id, variant) => {
    const flag = flagOf('multivariate-flag', { multivariate: THREE_VARIANTS });
    expect(evaluateFlag(flag, ctxOf(id))).toEqual(matched('multivariate-flag', 0, variant));
  });

  test('v2_complex: realm = cloud at 80% with four 25% variants', () => {
    const flag = flagOf('multivariate-flag', {
      groups: [{ properties: [{ key: 'realm', type: 'person', value: 'cloud' }], rollout_percentage: 80 }],
      multivariate: FOUR_VARIANTS,
    });
    expect(evaluateFlag(flag, tim)).toEqual(matched('multivariate-flag', 0, 'second-variant'));
    const hosted = ctxOf('hosted_id', { personProperties: { realm: 'hosted' } });
    expect(evaluateFlag(flag, hosted)).toEqual(off('multivariate-flag', 'no_condition_match', 0));
  });
});

describe('conditions', () => {
  const usOnly = { properties: [{ key: 'country', type: 'person' as const, value: 'US' }] };
  const posthogStaff = { properties: [email('@posthog.com', 'icontains')] };

  test.each([
    ['conditions are ORed: the second one matches', [usOnly, posthogStaff], { email: 'a@posthog.com' }, matched('f', 1)],
    ['the first matching condition wins', [usOnly, posthogStaff], { email: 'a@posthog.com', country: 'us' }, matched('f', 0)],
    [
      'properties are ANDed',
      [{ properties: [...usOnly.properties, ...posthogStaff.properties] }],
      { country: 'US', email: 'a@example.com' },
      off('f', 'no_condition_match', 0),
    ],
    ['no match reports the last condition tried', [usOnly, posthogStaff], {}, off('f', 'no_condition_match', 1)],
    [
      'out of rollout outranks a later non-match',
      [{ properties: [], rollout_percentage: 0 }, usOnly],
      {},
      off('f', 'out_of_rollout_bound', 0),
    ],
    [
      'a later out of rollout replaces an earlier non-match',
      [usOnly, { properties: [], rollout_percentage: 0 }],
      {},
      off('f', 'out_of_rollout_bound', 1),
    ],
    ['an empty property list matches everyone', [{ properties: [] }], {}, matched('f', 0)],
    ['missing properties means none', [{ rollout_percentage: 100 }], {}, matched('f', 0)],
    ['no conditions at all answers no_group_type, as the flags service does', [], {}, off('f', 'no_group_type', null)],
  ])('%s', (_name, groups, personProperties, expected) => {
    const flag = flagOf('f', { groups });
    expect(evaluateFlag(flag, ctxOf('example_id', { personProperties }))).toEqual(expected);
  });
});

describe('variant overrides', () => {
  const variants = {
    variants: [
      { key: 'control', rollout_percentage: 100 },
      { key: 'test', rollout_percentage: 0 },
    ],
  };
  const vip = { properties: [email('@vip.com', 'icontains')], variant: 'test' };

  test('conditions keep their stored order: an earlier condition without override wins', () => {
    const flag = flagOf('order-test', { groups: [{ properties: [], rollout_percentage: 100 }, vip], multivariate: variants });
    const ctx = ctxOf('user123', { personProperties: { email: 'user@vip.com' } });
    expect(evaluateFlag(flag, ctx)).toEqual(matched('order-test', 0, 'control'));
  });

  test('the override of the matching condition is served', () => {
    const us = { properties: [{ key: 'country', type: 'person' as const, value: 'US' }] };
    const flag = flagOf('order-test', { groups: [us, vip], multivariate: variants });
    const ctx = ctxOf('user123', { personProperties: { email: 'user@vip.com' } });
    expect(evaluateFlag(flag, ctx)).toEqual(matched('order-test', 1, 'test'));
  });

  test('an override that is not a variant falls back to the hashed variant', () => {
    const flag = flagOf('multivariate-flag', {
      groups: [{ properties: [], variant: 'no-such-variant' }],
      multivariate: THREE_VARIANTS,
    });
    expect(evaluateFlag(flag, ctxOf('other_id'))).toEqual(matched('multivariate-flag', 0, 'third-variant'));
  });

  test('variants summing to less than 100 can leave a match without a variant', () => {
    const flag = flagOf('multivariate-flag', {
      multivariate: { variants: [{ key: 'tiny', rollout_percentage: 1 }] },
      payloads: { true: '"boolean payload"' },
    });
    expect(evaluateFlag(flag, ctxOf('example_id'))).toEqual(matched('multivariate-flag', 0, null, '"boolean payload"'));
  });
});

describe('group flags', () => {
  const companyFlag = (filters: Partial<FlagFilters> = {}) =>
    flagOf('beta-feature', { aggregation_group_type_index: 0, groups: [{ properties: [], rollout_percentage: 50 }], ...filters });
  const withCompany = (key: string | number | undefined, groupProperties = {}) =>
    ctxOf('person-1', {
      groups: key === undefined ? {} : { company: key },
      groupTypeIndexToName: { 0: 'company', 1: 'project' },
      groupProperties: { company: groupProperties },
    });

  test.each([
    ['hashes the group key, not the distinct id (in)', 'example_id', matched('beta-feature', 0)],
    ['hashes the group key, not the distinct id (out)', 'another_id', off('beta-feature', 'out_of_rollout_bound', 0)],
    ['no group of that type in the request', undefined, off('beta-feature', 'no_group_type', 0)],
    ['an empty group key is no group', '', off('beta-feature', 'no_group_type', 0)],
  ])('%s', (_name, key, expected) => {
    expect(evaluateFlag(companyFlag(), withCompany(key))).toEqual(expected);
  });

  test('a numeric group key is hashed as text', () => {
    const flag = companyFlag({ groups: [{ properties: [], rollout_percentage: 100 }] });
    expect(evaluateFlag(flag, withCompany(5))).toEqual(matched('beta-feature', 0));
  });

  test('an unknown group type index is no group', () => {
    const flag = companyFlag({ aggregation_group_type_index: 3 });
    expect(evaluateFlag(flag, withCompany('example_id'))).toEqual(off('beta-feature', 'no_group_type', 0));
  });

  test('group filters read the group properties', () => {
    const plan = { key: 'plan', type: 'group' as const, group_type_index: 0, value: 'enterprise' };
    const flag = companyFlag({ groups: [{ properties: [plan], rollout_percentage: 100 }] });
    expect(evaluateFlag(flag, withCompany('c1', { plan: 'Enterprise' }))).toEqual(matched('beta-feature', 0));
    expect(evaluateFlag(flag, withCompany('c1', { plan: 'free' }))).toEqual(off('beta-feature', 'no_condition_match', 0));
  });

  test('mixed targeting: a skipped group condition enriches a person non-match', () => {
    const flag = flagOf('mixed', {
      groups: [
        { properties: [], aggregation_group_type_index: 1 },
        { properties: [email('a@b.c')], aggregation_group_type_index: null },
      ],
    });
    const expected = off(
      'mixed',
      'no_condition_match',
      1,
      'No matching condition set (group conditions were not evaluated because no group type was provided)',
    );
    expect(evaluateFlag(flag, withCompany('c1'))).toEqual(expected);
  });

  test('mixed targeting: a person condition can match when the group is missing', () => {
    const flag = flagOf('mixed', {
      aggregation_group_type_index: 0,
      groups: [
        { properties: [], aggregation_group_type_index: 1 },
        { properties: [], aggregation_group_type_index: null },
      ],
    });
    expect(evaluateFlag(flag, withCompany('c1'))).toEqual(matched('mixed', 1));
  });
});

describe('cohorts', () => {
  const inCohort = (value: unknown, operator?: string) => ({ key: 'id', type: 'cohort' as const, value, operator });
  const flagWith = (...properties: ReturnType<typeof inCohort>[]) => flagOf('cohort-flag', { groups: [{ properties }] });
  const definitions = {
    '10': {
      type: 'OR' as const,
      values: [
        { type: 'AND' as const, values: [email('@posthog.com', 'icontains'), { key: 'age', type: 'person' as const, value: '30', operator: 'gte' }] },
        { type: 'AND' as const, values: [{ key: 'vip', type: 'person' as const, value: true }] },
      ],
    },
    '11': { type: 'AND' as const, values: [{ type: 'AND' as const, values: [inCohort(10, 'in'), email('@posthog.com', 'not_icontains')] }] },
    '12': { type: 'AND' as const, values: [{ type: 'AND' as const, values: [inCohort(13, 'in')] }] },
    '13': { type: 'AND' as const, values: [{ type: 'AND' as const, values: [inCohort(12, 'in')] }] },
    '14': { type: 'AND' as const, values: [{ type: 'AND' as const, values: [{ key: '$pageview', type: 'behavioral', value: 'performed_event' } as never] }] },
    '15': { type: 'AND' as const, values: [{ type: 'AND' as const, values: [{ ...email('@posthog.com', 'icontains'), negation: true }] }] },
    '16': { type: 'OR' as const, values: [{ type: 'OR' as const, values: [{ ...inCohort(5, 'in'), negation: true }] }] },
  };

  test.each([
    ['a static member (membership set)', [inCohort(5, 'in')], {}, true],
    ['no operator means in', [inCohort(5)], {}, true],
    ['not a member', [inCohort(6, 'in')], {}, false],
    ['not_in a cohort the person is not in', [inCohort(6, 'not_in')], {}, true],
    ['not_in a cohort the person is in', [inCohort(5, 'not_in')], {}, false],
    ['an operator other than in/not_in never matches', [inCohort(5, 'exact')], {}, false],
    ['a cohort id given as text', [inCohort('5', 'in')], {}, true],
    ['dynamic cohort, first group', [inCohort(10)], { email: 'x@posthog.com', age: 31 }, true],
    ['dynamic cohort, second group', [inCohort(10)], { vip: 'true' }, true],
    ['dynamic cohort, no group', [inCohort(10)], { email: 'x@posthog.com', age: 29 }, false],
    ['nested cohort reference', [inCohort(11)], { vip: true, email: 'x@example.com' }, true],
    ['nested cohort reference, outer filter fails', [inCohort(11)], { vip: true, email: 'x@posthog.com' }, false],
    ['cohorts referring to each other are non-members', [inCohort(12)], {}, false],
    ['behavioural cohorts cannot be decided and are non-members', [inCohort(14)], {}, false],
    ['negated property inside an AND group', [inCohort(15)], { email: 'x@example.com' }, true],
    ['cohort negation is ignored inside an OR group', [inCohort(16)], {}, true],
    ['an unknown cohort is a non-member', [inCohort(99)], {}, false],
  ])('%s', (_name, properties, personProperties, enabled) => {
    const ctx = ctxOf('example_id', { personProperties, cohortMembership: new Set([5]), cohortDefinitions: definitions });
    const expected = enabled ? matched('cohort-flag', 0) : off('cohort-flag', 'no_condition_match', 0);
    expect(evaluateFlag(flagWith(...properties), ctx)).toEqual(expected);
  });
});

describe('experience continuity', () => {
  const continuityFlag = (ensure: boolean) =>
    flagOf('multivariate-flag', { multivariate: THREE_VARIANTS }, { ensure_experience_continuity: ensure });

  test.each([
    ['a stored hash key replaces the distinct id', true, { hashKeyOverrides: { 'multivariate-flag': 'other_id' } }, 'third-variant'],
    ['the request anon id is used when nothing is stored', true, { anonDistinctId: 'other_id' }, 'third-variant'],
    ['a stored key wins over the anon id', true, { hashKeyOverrides: { 'multivariate-flag': 'example_id' }, anonDistinctId: 'other_id' }, 'first-variant'],
    ['overrides for other flags are ignored', true, { hashKeyOverrides: { 'other-flag': 'other_id' } }, 'first-variant'],
    ['without continuity the anon id is ignored', false, { anonDistinctId: 'other_id' }, 'first-variant'],
    ['a stored key applies whatever the current setting', false, { hashKeyOverrides: { 'multivariate-flag': 'other_id' } }, 'third-variant'],
  ])('%s', (_name, ensure, extra, variant) => {
    expect(evaluateFlag(continuityFlag(ensure), ctxOf('example_id', extra))).toEqual(matched('multivariate-flag', 0, variant));
  });
});

describe('payloads', () => {
  const KEY = 'multivariate-flag';
  test.each([
    ['boolean flag: the "true" payload', {}, { true: '{"a": 1}' }, 'example_id', matched(KEY, 0, null, '{"a": 1}')],
    [
      'multivariate flag: the variant payload',
      { multivariate: THREE_VARIANTS },
      { 'first-variant': '"first"', 'third-variant': '"third"' },
      'other_id',
      matched(KEY, 0, 'third-variant', '"third"'),
    ],
    ['a variant without a payload', { multivariate: THREE_VARIANTS }, { 'third-variant': '"third"' }, 'example_id', matched(KEY, 0, 'first-variant')],
    ['payloads are returned as stored', {}, { true: { nested: [1, 2] } }, 'example_id', matched(KEY, 0, null, { nested: [1, 2] })],
    [
      'a flag that is off has no payload',
      { groups: [{ properties: [], rollout_percentage: 0 }] },
      { true: '"x"' },
      'example_id',
      off(KEY, 'out_of_rollout_bound', 0),
    ],
  ])('%s', (_name, filters, payloads, id, expected) => {
    expect(evaluateFlag(flagOf(KEY, { ...filters, payloads }), ctxOf(id))).toEqual(expected);
  });
});

describe('inactive and deleted flags', () => {
  test.each([
    ['inactive', { active: false }],
    ['deleted', { deleted: true }],
  ])('a %s flag is disabled', (_name, extra) => {
    expect(evaluateFlag(flagOf('f', {}, extra), ctxOf('example_id'))).toEqual(off('f', 'flag_disabled', null));
  });

  test('evaluateFlags neither evaluates nor returns them', () => {
    const flags = [
      flagOf('on', {}, { id: 1 }),
      flagOf('inactive', {}, { id: 2, active: false }),
      flagOf('deleted', {}, { id: 3, deleted: true }),
    ];
    expect(evaluateFlags(flags, ctxOf('example_id'))).toEqual([matched('on', 0)]);
  });
});

describe('early access and holdouts', () => {
  const enrollmentFlag = flagOf('beta', { feature_enrollment: true, groups: [{ properties: [], rollout_percentage: 0 }], payloads: { true: '"p"' } });
  const superGroupFlag = flagOf('beta', {
    super_groups: [{ properties: [{ key: '$feature_enrollment/beta', type: 'person', value: ['true'], operator: 'exact' }], rollout_percentage: 100 }],
    groups: [{ properties: [], rollout_percentage: 0 }],
  });
  const superValue = (enabled: boolean, payload: unknown = null): FlagResult => ({
    key: 'beta',
    enabled,
    variant: null,
    payload,
    reason: { code: 'super_condition_value', condition_index: 0, description: 'Super condition value' },
  });

  test.each([
    ['enrolled', enrollmentFlag, { '$feature_enrollment/beta': true }, superValue(true, '"p"')],
    ['enrolled as text', enrollmentFlag, { '$feature_enrollment/beta': 'true' }, superValue(true, '"p"')],
    ['opted out (the service still attaches the payload)', enrollmentFlag, { '$feature_enrollment/beta': false }, superValue(false, '"p"')],
    ['not enrolled falls through to the conditions', enrollmentFlag, {}, off('beta', 'out_of_rollout_bound', 0)],
    ['legacy super_groups, enrolled', superGroupFlag, { '$feature_enrollment/beta': true }, superValue(true)],
    ['legacy super_groups, opted out', superGroupFlag, { '$feature_enrollment/beta': false }, superValue(false)],
    ['legacy super_groups, property absent', superGroupFlag, {}, off('beta', 'out_of_rollout_bound', 0)],
  ])('%s', (_name, flag, personProperties, expected) => {
    expect(evaluateFlag(flag, ctxOf('example_id', { personProperties }))).toEqual(expected);
  });

  test('a holdout of 100% holds everyone out with variant holdout-<id>', () => {
    const flag = flagOf('exp', { holdout: { id: 7, exclusion_percentage: 100 }, payloads: { 'holdout-7': '"held"' } });
    expect(evaluateFlag(flag, ctxOf('example_id'))).toEqual({
      key: 'exp',
      enabled: true,
      variant: 'holdout-7',
      payload: '"held"',
      reason: { code: 'holdout_condition_value', condition_index: null, description: 'Holdout condition value' },
    });
  });

  test('a person hashed above the exclusion percentage is evaluated normally', () => {
    // hash("holdout-example_id") is 0.9402.
    const flag = flagOf('exp', { holdout: { id: 7, exclusion_percentage: 94 } });
    expect(evaluateFlag(flag, ctxOf('example_id'))).toEqual(matched('exp', 0));
    const held = flagOf('exp', { holdout: { id: 7, exclusion_percentage: 94.1 } });
    expect(evaluateFlag(held, ctxOf('example_id')).variant).toBe('holdout-7');
  });
});

describe('flag dependencies', () => {
  const dependsOn = (id: number, value: unknown) => ({ key: String(id), type: 'flag' as const, value, operator: 'flag_evaluates_to' });
  const base = flagOf('base', { groups: [{ properties: [email('a@b.c')] }] }, { id: 1 });
  // multivariate-flag 50/25/25 gives example_id first-variant (PostHog's published vector).
  const variantBase = flagOf('multivariate-flag', { multivariate: THREE_VARIANTS }, { id: 2 });

  test.each([
    ['depends on a flag being on', dependsOn(1, true), { email: 'a@b.c' }, true],
    ['depends on a flag being on, it is off', dependsOn(1, true), {}, false],
    ['depends on a flag being off', dependsOn(1, false), {}, true],
    ['depends on a variant', dependsOn(2, 'first-variant'), {}, true],
    ['depends on another variant', dependsOn(2, 'third-variant'), {}, false],
    ['a variant counts as on', dependsOn(2, true), {}, true],
  ])('%s', (_name, filter, personProperties, enabled) => {
    // The dependent flag comes first to show that dependencies are evaluated before it.
    const dependent = flagOf('dependent', { groups: [{ properties: [filter] }] }, { id: 3 });
    const results = evaluateFlags([dependent, base, variantBase], ctxOf('example_id', { personProperties }));
    expect(results[0]).toEqual(enabled ? matched('dependent', 0) : off('dependent', 'no_condition_match', 0));
  });

  test('a dependency on an absent flag is a missing dependency', () => {
    const dependent = flagOf('dependent', { groups: [{ properties: [dependsOn(42, true)] }] }, { id: 3 });
    expect(evaluateFlags([dependent], ctxOf('example_id'))).toEqual([off('dependent', 'missing_dependency', null)]);
    expect(evaluateFlag(dependent, ctxOf('example_id'))).toEqual(off('dependent', 'missing_dependency', null));
  });

  test('evaluateFlag uses the values it is given', () => {
    const dependent = flagOf('dependent', { groups: [{ properties: [dependsOn(1, true)] }] }, { id: 3 });
    expect(evaluateFlag(dependent, ctxOf('example_id'), new Map([[1, true]]))).toEqual(matched('dependent', 0));
  });

  test('flags in a cycle, and flags depending on them, are missing dependencies', () => {
    const a = flagOf('a', { groups: [{ properties: [dependsOn(2, true)] }] }, { id: 1 });
    const b = flagOf('b', { groups: [{ properties: [dependsOn(1, true)] }] }, { id: 2 });
    const c = flagOf('c', { groups: [{ properties: [dependsOn(1, false)] }] }, { id: 3 });
    expect(evaluateFlags([a, b, c], ctxOf('example_id'))).toEqual([
      off('a', 'missing_dependency', null),
      off('b', 'missing_dependency', null),
      off('c', 'missing_dependency', null),
    ]);
  });
});

describe('evaluateFlags', () => {
  test('a malformed flag answers error without failing the others', () => {
    const broken = flagOf('broken', { groups: [null as never] }, { id: 1 });
    const fine = flagOf('fine', {}, { id: 2 });
    expect(evaluateFlags([broken, fine], ctxOf('example_id'))).toEqual([off('broken', 'error', null), matched('fine', 0)]);
  });

  test('keeps the input order', () => {
    const flags = ['c', 'a', 'b'].map((key, index) => flagOf(key, {}, { id: index + 1 }));
    expect(evaluateFlags(flags, ctxOf('example_id')).map((result) => result.key)).toEqual(['c', 'a', 'b']);
  });

  test('an empty distinct id hashes to 0 and is in every rollout', () => {
    const flag = flagOf('f', { groups: [{ properties: [], rollout_percentage: 1 }] });
    expect(evaluateFlags([flag], ctxOf(''))).toEqual([matched('f', 0)]);
  });
});

describe('flagNeedsPersonProperties / flagNeedsCohorts', () => {
  const cohort = { key: 'id', type: 'cohort' as const, value: 3 };
  const group = { key: 'plan', type: 'group' as const, group_type_index: 0, value: 'x' };
  const dependency = { key: '1', type: 'flag' as const, value: true, operator: 'flag_evaluates_to' };

  test.each([
    ['rollout only', {}, false, false],
    ['a person filter', { groups: [{ properties: [email('x')] }] }, true, false],
    ['an untyped (legacy) filter is a person filter', { groups: [{ properties: [{ key: 'k', value: 'v' }] }] }, true, false],
    ['group filters only', { aggregation_group_type_index: 0, groups: [{ properties: [group] }] }, false, false],
    ['a cohort filter', { groups: [{ properties: [cohort] }] }, true, true],
    ['flag dependencies only', { groups: [{ properties: [dependency] }] }, false, false],
    ['early access enrollment', { feature_enrollment: true }, true, false],
    ['legacy top-level properties', { groups: undefined as never, properties: [email('x')] }, true, false],
  ])('%s', (_name, filters, needsPerson, needsCohorts) => {
    const flag = flagOf('f', filters);
    expect([flagNeedsPersonProperties(flag), flagNeedsCohorts(flag)]).toEqual([needsPerson, needsCohorts]);
  });
});
