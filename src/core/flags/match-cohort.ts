import { matchProperty } from './match-property';
import type { CohortPropertyGroup, FlagEvaluationContext, PropertyFilter } from './types';

type CohortContext = Pick<FlagEvaluationContext, 'cohortMembership' | 'cohortDefinitions' | 'now'>;

/** Filter types a cohort may use and still be decided from person properties alone. */
const LOCAL_TYPES = new Set(['person', 'cohort', undefined]);

const isCohortGroup = (value: CohortPropertyGroup | PropertyFilter): value is CohortPropertyGroup =>
  Array.isArray((value as CohortPropertyGroup).values);

export const parseCohortId = (filter: PropertyFilter): number | null => {
  const id = typeof filter.value === 'string' && /^\d+$/.test(filter.value) ? Number(filter.value) : filter.value;
  return typeof id === 'number' && Number.isInteger(id) ? id : null;
};

const usesOnlyLocalFilters = (group: CohortPropertyGroup): boolean =>
  (group.values ?? []).every((value) =>
    isCohortGroup(value) ? usesOnlyLocalFilters(value) : LOCAL_TYPES.has(value.type),
  );

/**
 * Membership first (static and precomputed cohorts), then the definition evaluated on the
 * person's properties. A cohort with behavioural filters, an unknown cohort, or one that refers
 * back to itself is a non-member, as in the flags service.
 */
const isCohortMember = (
  id: number,
  ctx: CohortContext,
  properties: Record<string, unknown>,
  seen: Set<number>,
): boolean => {
  if (ctx.cohortMembership?.has(id)) return true;
  const definition = ctx.cohortDefinitions?.[String(id)];
  if (!definition || seen.has(id) || !usesOnlyLocalFilters(definition)) return false;
  return matchCohortGroup(definition, ctx, properties, new Set([...seen, id]));
};

/** `in` (or no operator) tests membership and `not_in` its absence; any other operator fails. */
const applyCohortOperator = (filter: PropertyFilter, member: boolean): boolean => {
  const operator = filter.operator ?? 'in';
  if (operator === 'in') return member;
  return operator === 'not_in' ? !member : false;
};

/**
 * Inside an OR group the service ignores `negation` on cohort filters but honours it on property
 * filters; inside AND groups it honours both.
 */
const matchCohortLeaf = (
  leaf: PropertyFilter,
  isAnd: boolean,
  ctx: CohortContext,
  properties: Record<string, unknown>,
  seen: Set<number>,
): boolean => {
  if (leaf.type === 'cohort') {
    const id = parseCohortId(leaf);
    const matched = id !== null && applyCohortOperator(leaf, isCohortMember(id, ctx, properties, seen));
    return isAnd && leaf.negation ? !matched : matched;
  }
  const matched = matchProperty(leaf, properties, ctx.now);
  return leaf.negation ? !matched : matched;
};

const matchCohortGroup = (
  group: CohortPropertyGroup,
  ctx: CohortContext,
  properties: Record<string, unknown>,
  seen: Set<number>,
): boolean => {
  const isAnd = group.type !== 'OR';
  for (const value of group.values ?? []) {
    const matched = isCohortGroup(value)
      ? matchCohortGroup(value, ctx, properties, seen)
      : matchCohortLeaf(value, isAnd, ctx, properties, seen);
    if (matched !== isAnd) return matched;
  }
  return isAnd;
};

/** A flag condition's cohort filter (`{"type":"cohort","value":<id>,"operator":"in"|"not_in"}`). */
export const matchCohortFilter = (
  filter: PropertyFilter,
  ctx: CohortContext,
  personProperties: Record<string, unknown>,
): boolean => {
  const id = parseCohortId(filter);
  return id !== null && applyCohortOperator(filter, isCohortMember(id, ctx, personProperties, new Set()));
};
