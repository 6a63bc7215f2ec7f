import { resolveAggregation, resolveHashId } from './hash-identity';
import { matchCohortFilter } from './match-cohort';
import { matchProperty } from './match-property';
import { isInRollout } from './rollout-hash';
import type { FeatureFlag, FlagCondition, FlagEvaluationContext, FlagValue, PropertyFilter } from './types';

export type ConditionReason = 'condition_match' | 'no_condition_match' | 'out_of_rollout_bound' | 'no_group_type';

export interface ConditionOutcome {
  matched: boolean;
  reason: ConditionReason;
  /** What the condition hashed; the variant is chosen with the same identifier. */
  hashId: string | null;
}

/** Flag ids → values of flags already evaluated for this person (for flag-dependency filters). */
export type FlagValues = ReadonlyMap<number, FlagValue>;

const EMPTY: Record<string, unknown> = {};

/** Legacy flags kept their single condition at the top level of `filters` and on the model. */
export const listConditions = (flag: FeatureFlag): FlagCondition[] =>
  Array.isArray(flag.filters.groups)
    ? flag.filters.groups
    : [{ properties: flag.filters.properties ?? [], rollout_percentage: flag.rollout_percentage ?? null }];

/** A dependency filter's key is the other flag's id; it compares that flag's value. */
export const parseDependencyId = (filter: PropertyFilter): number | null =>
  /^\d+$/.test(String(filter.key)) ? Number(filter.key) : null;

const matchFlagDependency = (filter: PropertyFilter, values: FlagValues): boolean => {
  const id = parseDependencyId(filter);
  const value = id === null ? undefined : values.get(id);
  if (filter.operator !== 'flag_evaluates_to' || value === undefined) return false;
  if (filter.value === true) return value !== false;
  if (filter.value === false) return value === false;
  return typeof filter.value === 'string' && value === filter.value;
};

/** Group filters read their own group type (or the condition's); everything else is the person. */
const selectProperties = (
  filter: PropertyFilter,
  aggregation: number | null,
  ctx: FlagEvaluationContext,
): Record<string, unknown> => {
  if (filter.type !== 'group') return ctx.personProperties;
  const index = filter.group_type_index ?? aggregation;
  const name = index === null ? undefined : ctx.groupTypeIndexToName?.[index];
  return (name !== undefined && ctx.groupProperties?.[name]) || EMPTY;
};

const matchConditionFilter = (
  filter: PropertyFilter,
  aggregation: number | null,
  ctx: FlagEvaluationContext,
  values: FlagValues,
): boolean => {
  if (filter.type === 'flag') return matchFlagDependency(filter, values);
  if (filter.type === 'cohort') return matchCohortFilter(filter, ctx, ctx.personProperties);
  return matchProperty(filter, selectProperties(filter, aggregation, ctx), ctx.now);
};

/**
 * One release condition: every filter must match, then the identifier must fall inside the
 * rollout. A group-aggregated condition without its group key in the request is skipped as
 * `no_group_type`.
 */
export const matchCondition = (
  flag: FeatureFlag,
  condition: FlagCondition,
  ctx: FlagEvaluationContext,
  values: FlagValues,
  aggregation: number | null = resolveAggregation(flag, condition),
): ConditionOutcome => {
  const hashId = resolveHashId(flag, aggregation, ctx);
  if (hashId === null) return { matched: false, reason: 'no_group_type', hashId };
  const filters = condition.properties ?? [];
  if (!filters.every((filter) => matchConditionFilter(filter, aggregation, ctx, values))) {
    return { matched: false, reason: 'no_condition_match', hashId };
  }
  return isInRollout(flag.key, hashId, condition.rollout_percentage)
    ? { matched: true, reason: 'condition_match', hashId }
    : { matched: false, reason: 'out_of_rollout_bound', hashId };
};
