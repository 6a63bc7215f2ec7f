import { describe, expect, test } from 'bun:test';
import { evaluateFlag } from '../../../src/core/flags/evaluate-flags';
import type { FeatureFlag, FlagFilters, FlagResult } from '../../../src/core/flags/types';

/**
 * PostHog's cross-implementation consistency vectors (posthog `TestFeatureFlagMatcherConsistency`,
 * repeated in every server SDK): the answers for `distinct_id_0` … `distinct_id_99`. They pin the
 * hash, the rollout comparison and the variant buckets to PostHog's.
 */
const flagOf = (key: string, filters: FlagFilters): FeatureFlag => ({
  id: 1,
  key,
  name: key,
  filters,
  active: true,
  deleted: false,
  ensure_experience_continuity: false,
});

const contextFor = (distinctId: string) => ({ distinctId, personProperties: {}, now: new Date('2024-01-01T00:00:00Z') });

// 1 = enabled, 0 = out of rollout; from test_simple_flag_consistency.
const SIMPLE_FLAG_RESULTS =
  '0110100101' +
  '0110100011' +
  '0100101100' +
  '0111100000' +
  '0110110001' +
  '1000010101' +
  '0110101011' +
  '0010010100' +
  '1000110110' +
  '1111101100';

// Digits name the variant (1 = first-variant … 5 = fifth-variant), '-' = out of rollout; from
// test_multivariate_flag_consistency.
const MULTIVARIATE_FLAG_RESULTS =
  '221--21---' +
  '13-121--41' +
  '-3---11111' +
  '13-321-3--' +
  '12-112-1--' +
  '11121-2232' +
  '1-124-111-' +
  '12-3------' +
  '15-212-33-' +
  '---3--11-3';

const VARIANT_NAMES = ['first', 'second', 'third', 'fourth', 'fifth'];

const expectedResult = (key: string, variant: string | null, enabled: boolean): FlagResult => ({
  key,
  enabled,
  variant,
  payload: null,
  reason: enabled
    ? { code: 'condition_match', condition_index: 0, description: 'Matched condition set 1' }
    : { code: 'out_of_rollout_bound', condition_index: 0, description: 'Out of rollout bound' },
});

describe('simple-flag at 45%', () => {
  const flag = flagOf('simple-flag', { groups: [{ properties: [], rollout_percentage: 45 }] });
  test.each([...SIMPLE_FLAG_RESULTS].map((bit, index) => [index, bit === '1'] as const))(
    'distinct_id_%i → %p',
    (index, enabled) => {
      expect(evaluateFlag(flag, contextFor(`distinct_id_${index}`))).toEqual(
        expectedResult('simple-flag', null, enabled),
      );
    },
  );
});

describe('multivariate-flag at 55% with variants 50/20/20/5/5', () => {
  const flag = flagOf('multivariate-flag', {
    groups: [{ properties: [], rollout_percentage: 55 }],
    multivariate: {
      variants: [
        { key: 'first-variant', name: 'First Variant', rollout_percentage: 50 },
        { key: 'second-variant', name: 'Second Variant', rollout_percentage: 20 },
        { key: 'third-variant', name: 'Third Variant', rollout_percentage: 20 },
        { key: 'fourth-variant', name: 'Fourth Variant', rollout_percentage: 5 },
        { key: 'fifth-variant', name: 'Fifth Variant', rollout_percentage: 5 },
      ],
    },
  });
  const cases = [...MULTIVARIATE_FLAG_RESULTS].map(
    (symbol, index) => [index, symbol === '-' ? null : `${VARIANT_NAMES[Number(symbol) - 1]}-variant`] as const,
  );
  test.each(cases)('distinct_id_%i → %p', (index, variant) => {
    expect(evaluateFlag(flag, contextFor(`distinct_id_${index}`))).toEqual(
      expectedResult('multivariate-flag', variant, variant !== null),
    );
  });
});
