import { describe, expect, test } from 'bun:test';
import type { FlagResult } from '../../src/core/flags/types';
import { planFor } from '../../src/modules/decide/flag-plan';
import { forgetDistinctIds, rememberedResults, sharedLists } from '../../src/modules/decide/result-memo';
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

  const counting = () => {
    const counter = { calls: 0, evaluate: (enabled: boolean) => () => (counter.calls++, [result('a', enabled)]) };
    return counter;
  };

  test('inputs tell absent, undefined, null, text and lists apart; other properties do not count', () => {
    const memoPlan = planFor({ teamId: 1, flags: [stored(1, 'a', [{ key: 'email', type: 'person', value: 'x', operator: 'icontains' }])] });
    const counter = counting();
    const inputs: Array<Record<string, unknown>> = [{}, { email: undefined }, { email: null }, { email: 'null' }, { email: 'x' }, { email: ['x'] }, { email: ['y'] }];
    for (const given of inputs) rememberedResults(memoPlan, 'id', given, undefined, counter.evaluate(true));
    expect(counter.calls).toBe(inputs.length);
    rememberedResults(memoPlan, 'id', { email: ['y'], other: 1 }, undefined, counter.evaluate(true));
    expect(counter.calls).toBe(inputs.length);
  });

  test("the request's properties win over the stored person's, as in evaluation", () => {
    const memoPlan = planFor({ teamId: 1, flags: [stored(1, 'a', [{ key: 'email', type: 'person', value: 'x', operator: 'icontains' }])] });
    const counter = counting();
    const first = rememberedResults(memoPlan, 'id', { email: 'x' }, { email: 'y' }, counter.evaluate(true));
    expect(rememberedResults(memoPlan, 'id', {}, { email: 'x' }, counter.evaluate(false))).toBe(first);
    expect(rememberedResults(memoPlan, 'id', { email: 'x' }, undefined, counter.evaluate(false))).toBe(first);
    expect(counter.calls).toBe(1);
    rememberedResults(memoPlan, 'id', {}, { email: 'y' }, counter.evaluate(false));
    expect(counter.calls).toBe(2);
  });

  test("a deleted person's distinct ids are forgotten in every plan's memo; others stay", () => {
    const plans = [1, 2].map((teamId) => planFor({ teamId, flags: [stored(1, 'a', [{ key: 'email', type: 'person', value: 'x', operator: 'icontains' }])] }));
    const counter = counting();
    for (const p of plans) for (const id of ['gone', 'gone-anon', 'kept']) rememberedResults(p, id, {}, { email: 'x@y' }, counter.evaluate(true));
    expect(counter.calls).toBe(6);
    forgetDistinctIds(['gone', 'gone-anon']);
    for (const p of plans) for (const id of ['gone', 'gone-anon', 'kept']) rememberedResults(p, id, {}, { email: 'x@y' }, counter.evaluate(true));
    expect(counter.calls).toBe(10);
  });

  test('answers are remembered, shared between inputs with the same outcome, and bounded', () => {
    const counter = counting();
    const first = rememberedResults(plan, 'one', {}, undefined, counter.evaluate(true));
    expect(rememberedResults(plan, 'one', {}, undefined, counter.evaluate(false))).toBe(first);
    expect(counter.calls).toBe(1);
    expect(sharedLists.has(first)).toBe(true);
    const other = rememberedResults(plan, 'two', {}, undefined, counter.evaluate(true));
    expect(other[0]).toBe(first[0]);
    // Past two generations the oldest inputs are evaluated again.
    for (let i = 0; i < 10_001; i++) rememberedResults(plan, `user-${i}`, {}, undefined, counter.evaluate(i % 2 === 0));
    counter.calls = 0;
    rememberedResults(plan, 'one', {}, undefined, counter.evaluate(true));
    expect(counter.calls).toBe(1);
  });
});
