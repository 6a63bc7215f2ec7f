import { describe, expect, test } from 'bun:test';
import type { FlagResult } from '../../src/core/flags/types';
import { planFor } from '../../src/modules/decide/flag-plan';
import { memoInput, rememberedResults, sharedLists } from '../../src/modules/decide/result-memo';
import type { StoredFlag } from '../../src/storage';

const stored = (id: number, key: string, properties: StoredFlag['filters']['groups'][number]['properties'] = [], extra: Partial<StoredFlag> = {}): StoredFlag => ({
  id,
  teamId: 1,
  key,
  name: '',
  filters: { groups: [{ properties, rollout_percentage: 50 }] },
  active: true,
  deleted: false,
  ensure_experience_continuity: false,
  createdBy: null,
  createdAt: new Date(0),
  updatedAt: new Date(0),
  version: 1,
  ...extra,
});

const result = (key: string, enabled: boolean): FlagResult => ({
  key,
  enabled,
  variant: null,
  payload: null,
  reason: { code: enabled ? 'condition_match' : 'out_of_rollout_bound', condition_index: 0, description: '' },
});

describe('flag plan', () => {
  test('what may be remembered: no groups, cohorts, continuity, relative dates or dependencies', () => {
    const plan = planFor({
      teamId: 1,
      flags: [
        stored(1, 'rollout'),
        stored(2, 'email', [{ key: 'email', type: 'person', value: 'x', operator: 'icontains' }]),
        stored(3, 'dated', [{ key: 'joined', type: 'person', value: '-7d', operator: 'is_date_after' }]),
        stored(4, 'sticky', [], { ensure_experience_continuity: true }),
        stored(5, 'cohort', [{ key: 'id', type: 'cohort', value: 9 }]),
        stored(6, 'company', [{ key: 'seats', type: 'group', group_type_index: 0, value: '1', operator: 'gt' }]),
        stored(7, 'off', [], { active: false }),
      ],
    });
    expect(plan.memoizable.map((f) => f.key)).toEqual(['rollout', 'email']);
    expect(plan.rest.map((f) => f.key)).toEqual(['dated', 'sticky', 'cohort', 'company']);
    expect(plan.memoKeys).toEqual(['email']);
    expect(plan.continuityKeys).toEqual(['sticky']);
    expect(plan.cohortIds).toEqual([9]);
  });

  test('a flag dependency anywhere turns remembering off', () => {
    const plan = planFor({
      teamId: 1,
      flags: [stored(1, 'base'), stored(2, 'child', [{ key: '1', type: 'flag', value: true, operator: 'flag_evaluates_to' }])],
    });
    expect(plan.memoizable).toEqual([]);
    expect(plan.rest.map((f) => f.key)).toEqual(['base', 'child']);
  });
});

describe('result memo', () => {
  const plan = planFor({ teamId: 1, flags: [stored(1, 'a', [{ key: 'email', type: 'person', value: 'x', operator: 'icontains' }])] });

  test('keys tell absent, undefined, null and values apart', () => {
    const keys = [{}, { email: undefined }, { email: null }, { email: 'null' }, { email: 'x' }, { email: ['x'] }].map((p) => memoInput(plan, 'id', p));
    expect(new Set(keys).size).toBe(keys.length);
    expect(memoInput(plan, 'id', { email: 'x', other: 1 })).toBe(memoInput(plan, 'id', { email: 'x' }));
  });

  test('answers are remembered, shared between inputs with the same outcome, and bounded', () => {
    let calls = 0;
    const evaluate = (enabled: boolean) => () => {
      calls++;
      return [result('a', enabled)];
    };
    const first = rememberedResults(plan, 'one', evaluate(true));
    expect(rememberedResults(plan, 'one', evaluate(false))).toBe(first);
    expect(calls).toBe(1);
    expect(sharedLists.has(first)).toBe(true);
    const other = rememberedResults(plan, 'two', evaluate(true));
    expect(other[0]).toBe(first[0]);
    // Past two generations the oldest inputs are evaluated again.
    for (let i = 0; i < 10_001; i++) rememberedResults(plan, `user-${i}`, evaluate(i % 2 === 0));
    calls = 0;
    rememberedResults(plan, 'one', evaluate(true));
    expect(calls).toBe(1);
  });
});
