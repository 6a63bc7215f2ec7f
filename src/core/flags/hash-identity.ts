import type { FeatureFlag, FlagCondition, FlagEvaluationContext } from './types';

type IdentityContext = Pick<
  FlagEvaluationContext,
  'distinctId' | 'groups' | 'groupTypeIndexToName' | 'hashKeyOverrides' | 'anonDistinctId'
>;

/** A condition without its own aggregation inherits the flag's; an explicit null means persons. */
export const resolveAggregation = (flag: FeatureFlag, condition: FlagCondition): number | null =>
  condition.aggregation_group_type_index !== undefined
    ? condition.aggregation_group_type_index
    : (flag.filters.aggregation_group_type_index ?? null);

/** The request's key for a group type; an empty or non-scalar key counts as no group. */
export const findGroupKey = (groupTypeIndex: number, ctx: IdentityContext): string | null => {
  const name = ctx.groupTypeIndexToName?.[groupTypeIndex];
  const key = name === undefined ? undefined : ctx.groups?.[name];
  if (typeof key === 'number') return String(key);
  return typeof key === 'string' && key !== '' ? key : null;
};

/**
 * What a condition hashes: the group key for group aggregation (null when the request lacks it),
 * otherwise the person's stored continuity hash key for this flag, then — for continuity flags —
 * the request's `$anon_distinct_id`, then the distinct id. A stored override applies whatever the
 * flag's current continuity setting, as in the flags service.
 */
export const resolveHashId = (flag: FeatureFlag, aggregation: number | null, ctx: IdentityContext): string | null => {
  if (aggregation !== null) return findGroupKey(aggregation, ctx);
  const stored = ctx.hashKeyOverrides?.[flag.key];
  if (stored !== undefined) return stored;
  if (flag.ensure_experience_continuity && ctx.anonDistinctId !== undefined) return ctx.anonDistinctId;
  return ctx.distinctId;
};

/** Holdouts ignore stored continuity keys and hash an empty key for a missing group. */
export const resolveHoldoutId = (flag: FeatureFlag, ctx: IdentityContext): string => {
  const aggregation = flag.filters.aggregation_group_type_index ?? null;
  if (aggregation !== null) return findGroupKey(aggregation, ctx) ?? '';
  if (flag.ensure_experience_continuity && ctx.anonDistinctId !== undefined) return ctx.anonDistinctId;
  return ctx.distinctId;
};
