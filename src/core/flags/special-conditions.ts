import { resolveHoldoutId } from './hash-identity';
import { type FlagValues, matchCondition } from './match-condition';
import { hasProperty } from './match-property';
import { hashHoldout } from './rollout-hash';
import type { FeatureFlag, FlagEvaluationContext } from './types';

/** A decision taken before the release conditions are looked at. */
export interface EarlyDecision {
  enabled: boolean;
  variant: string | null;
  code: 'super_condition_value' | 'holdout_condition_value';
  conditionIndex: number | null;
}

/**
 * Early access. New flags name the enrollment property by convention; legacy ones carry it as
 * `super_groups[0]`, evaluated as a person condition once the person has any of its keys. Only a
 * person who has the property gets a decision here; everyone else falls through.
 */
export const decideEnrollment = (
  flag: FeatureFlag,
  ctx: FlagEvaluationContext,
  values: FlagValues,
): EarlyDecision | null => {
  if (flag.filters.feature_enrollment === true) {
    const key = `$feature_enrollment/${flag.key}`;
    if (!hasProperty(ctx.personProperties, key)) return null;
    const value = ctx.personProperties[key];
    const enabled = value === true || value === 'true';
    return { enabled, variant: null, code: 'super_condition_value', conditionIndex: 0 };
  }
  const superCondition = flag.filters.super_groups?.[0];
  const filters = superCondition?.properties ?? [];
  if (!superCondition || !filters.some((filter) => hasProperty(ctx.personProperties, filter.key))) return null;
  const { matched } = matchCondition(flag, superCondition, ctx, values, null);
  return { enabled: matched, variant: null, code: 'super_condition_value', conditionIndex: 0 };
};

/** Experiment holdouts: people hashed under the exclusion percentage get `holdout-<id>`. */
export const decideHoldout = (flag: FeatureFlag, ctx: FlagEvaluationContext): EarlyDecision | null => {
  const holdout = flag.filters.holdout;
  if (!holdout) return null;
  const percentage = Math.min(Math.max(holdout.exclusion_percentage, 0), 100);
  if (percentage < 100 && hashHoldout(resolveHoldoutId(flag, ctx)) > percentage / 100) return null;
  return { enabled: true, variant: `holdout-${holdout.id}`, code: 'holdout_condition_value', conditionIndex: null };
};
