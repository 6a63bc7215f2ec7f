import { resolveAggregation } from './hash-identity';
import {
  type ConditionReason,
  type FlagValues,
  listConditions,
  matchCondition,
  parseDependencyId,
} from './match-condition';
import { variantFor } from './rollout-hash';
import { decideEnrollment, decideHoldout } from './special-conditions';
import type { FeatureFlag, FlagEvaluationContext, FlagReason, FlagReasonCode, FlagResult, FlagValue, PropertyFilter } from './types';

/** Later conditions replace an earlier reason of equal or lower score (PostHog's `<=`). */
const REASON_SCORE: Record<ConditionReason, number> = {
  condition_match: 4,
  out_of_rollout_bound: 3,
  no_condition_match: 2,
  no_group_type: 1,
};

const DESCRIPTIONS: Record<Exclude<FlagReasonCode, 'condition_match'>, string> = {
  no_condition_match: 'No matching condition set',
  out_of_rollout_bound: 'Out of rollout bound',
  no_group_type: 'No group type',
  super_condition_value: 'Super condition value',
  holdout_condition_value: 'Holdout condition value',
  flag_disabled: 'Feature flag is disabled',
  missing_dependency: 'Flag cannot be evaluated due to missing dependency',
  error: 'Flag evaluation failed',
};

const GROUPS_NOT_EVALUATED =
  'No matching condition set (group conditions were not evaluated because no group type was provided)';

/** `Matched condition set N` for the usual few conditions, made once. */
const MATCHED = Array.from({ length: 16 }, (_, index) => `Matched condition set ${index + 1}`);

const describeReason = (code: FlagReasonCode, conditionIndex: number | null): string =>
  code === 'condition_match' ? (MATCHED[conditionIndex ?? 0] ?? `Matched condition set ${(conditionIndex ?? 0) + 1}`) : DESCRIPTIONS[code];

const buildReason = (code: FlagReasonCode, conditionIndex: number | null, description?: string): FlagReason => ({
  code,
  condition_index: conditionIndex,
  description: description ?? describeReason(code, conditionIndex),
});

/** `filters.payloads[variant or "true"]`, as stored (usually JSON text). */
const findPayload = (flag: FeatureFlag, variant: string | null): unknown =>
  flag.filters.payloads?.[variant ?? 'true'] ?? null;

const buildResult = (
  flag: FeatureFlag,
  enabled: boolean,
  variant: string | null,
  reason: FlagReason,
  payload: unknown,
): FlagResult => ({ key: flag.key, enabled, variant, payload, reason });

const buildOffResult = (flag: FeatureFlag, code: FlagReasonCode): FlagResult =>
  buildResult(flag, false, null, buildReason(code, null), null);

const NO_IDS: readonly number[] = [];
const NO_FILTERS: readonly PropertyFilter[] = [];

/** Ids of the flags this one's filters depend on; the shared empty list when none (the usual case). */
const dependencyIds = (flag: FeatureFlag): readonly number[] => {
  let ids: number[] | null = null;
  for (const condition of listConditions(flag)) {
    for (const filter of condition?.properties ?? NO_FILTERS) {
      if (filter?.type !== 'flag') continue;
      const id = parseDependencyId(filter);
      if (id !== null) (ids ??= []).push(id);
    }
  }
  return ids ?? NO_IDS;
};

/** Malformed filters must not take the other flags down: null, and evaluating this one reports the error. */
const safeDependencyIds = (flag: FeatureFlag): readonly number[] | null => {
  try {
    return dependencyIds(flag);
  } catch {
    return null;
  }
};

const hasVariant = (flag: FeatureFlag, key: string): boolean => (flag.filters.multivariate?.variants ?? []).some((variant) => variant.key === key);

/**
 * Conditions in their stored order (PostHog stopped hoisting variant-override conditions on
 * 2025-09-12); the first match wins. Otherwise the best-scoring reason of the conditions tried.
 */
const decideConditions = (flag: FeatureFlag, ctx: FlagEvaluationContext, values: FlagValues): FlagResult => {
  let best: { reason: ConditionReason; index: number | null } = { reason: 'no_group_type', index: null };
  let skippedGroups = false;
  const conditions = listConditions(flag);
  for (let index = 0; index < conditions.length; index++) {
    const condition = conditions[index];
    const outcome = matchCondition(flag, condition, ctx, values, resolveAggregation(flag, condition));
    skippedGroups ||= outcome.reason === 'no_group_type';
    if (REASON_SCORE[best.reason] <= REASON_SCORE[outcome.reason]) best = { reason: outcome.reason, index };
    if (outcome.matched) {
      const override = condition.variant;
      const variant =
        override && hasVariant(flag, override) ? override : variantFor(flag, outcome.hashId ?? ctx.distinctId);
      return buildResult(flag, true, variant, buildReason('condition_match', index), findPayload(flag, variant));
    }
  }
  const description = best.reason === 'no_condition_match' && skippedGroups ? GROUPS_NOT_EVALUATED : undefined;
  return buildResult(flag, false, null, buildReason(best.reason, best.index, description), null);
};

/**
 * One flag for one person, as `/flags` answers it. Inactive and deleted flags answer
 * `flag_disabled`; a flag whose dependency has no value in `values` answers `missing_dependency`.
 */
export const evaluateFlag = (flag: FeatureFlag, ctx: FlagEvaluationContext, values: FlagValues = NO_VALUES): FlagResult => {
  if (!flag.active || flag.deleted) return buildOffResult(flag, 'flag_disabled');
  return evaluateLive(flag, ctx, values, dependencyIds(flag));
};

const NO_VALUES: FlagValues = new Map();

const evaluateLive = (flag: FeatureFlag, ctx: FlagEvaluationContext, values: FlagValues, dependencies: readonly number[]): FlagResult => {
  for (const id of dependencies) if (!values.has(id)) return buildOffResult(flag, 'missing_dependency');
  const early = decideEnrollment(flag, ctx, values) ?? decideHoldout(flag, ctx);
  if (!early) return decideConditions(flag, ctx, values);
  // The service attaches the "true" payload even when enrollment says no.
  const payload = findPayload(flag, early.variant);
  return buildResult(flag, early.enabled, early.variant, buildReason(early.code, early.conditionIndex), payload);
};

const safelyEvaluate = (flag: FeatureFlag, ctx: FlagEvaluationContext, values: FlagValues, dependencies: readonly number[] | null): FlagResult => {
  try {
    return dependencies ? evaluateLive(flag, ctx, values, dependencies) : evaluateFlag(flag, ctx, values);
  } catch {
    return buildOffResult(flag, 'error');
  }
};

export const toFlagValue = (result: FlagResult): FlagValue => (result.enabled ? (result.variant ?? true) : false);

/**
 * Every active, non-deleted flag for one person, in input order; PostHog neither evaluates nor
 * returns the others. Dependencies are evaluated first; flags in a dependency cycle, or depending
 * on a flag that is absent or itself unresolved, answer `missing_dependency`. A flag that throws
 * (malformed filters) answers `error` instead of failing the whole request.
 */
export const evaluateFlags = (flags: readonly FeatureFlag[], ctx: FlagEvaluationContext): FlagResult[] => {
  const live = flags.filter((flag) => flag.active && !flag.deleted);
  const dependencies = live.map(safeDependencyIds);
  // The usual case: no flag depends on another, so each is evaluated on its own, in order.
  if (dependencies.every((ids) => ids?.length === 0)) return live.map((flag) => safelyEvaluate(flag, ctx, NO_VALUES, NO_IDS));

  const byId = new Map(live.map((flag, index) => [flag.id, index]));
  const results = new Map<number, FlagResult>();
  const values = new Map<number, FlagValue>();
  const inProgress = new Set<number>();

  const visit = (flag: FeatureFlag, index: number): FlagResult => {
    const done = results.get(flag.id);
    if (done) return done;
    inProgress.add(flag.id);
    const unresolved = (dependencies[index] ?? NO_IDS).some((id) => {
      const dependency = byId.get(id);
      if (dependency === undefined || inProgress.has(id)) return true;
      return visit(live[dependency], dependency).reason.code === 'missing_dependency';
    });
    inProgress.delete(flag.id);
    const result = unresolved ? buildOffResult(flag, 'missing_dependency') : safelyEvaluate(flag, ctx, values, null);
    results.set(flag.id, result);
    values.set(flag.id, toFlagValue(result));
    return result;
  };

  return live.map(visit);
};

const collectFilters = (flag: FeatureFlag) => [
  ...listConditions(flag).flatMap((condition) => condition.properties ?? []),
  ...(flag.filters.super_groups ?? []).flatMap((condition) => condition.properties ?? []),
];

/** False when the flag can be decided without loading the person (rollout- or group-only flags). */
export const flagNeedsPersonProperties = (flag: FeatureFlag): boolean =>
  flag.filters.feature_enrollment === true ||
  collectFilters(flag).some((filter) => filter.type !== 'group' && filter.type !== 'flag');

export const flagNeedsCohorts = (flag: FeatureFlag): boolean =>
  collectFilters(flag).some((filter) => filter.type === 'cohort');
