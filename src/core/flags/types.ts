/**
 * The shapes of feature flags as PostHog stores them (`posthog_featureflag.filters` JSON) and of
 * one flag's answer for one person, as `/flags?v=2` and `/decide/?v=4` report it.
 *
 * Field names stay snake_case where they are PostHog's stored JSON, so flags imported from PostHog
 * and flags served by `local_evaluation` round-trip unchanged.
 */

export type PropertyFilterType =
  | 'person'
  | 'group'
  | 'cohort'
  | 'flag'
  | 'event'
  | 'element'
  | 'session'
  | 'person_metadata';

export interface PropertyFilter {
  key: string;
  value?: unknown;
  /** Absent or null means `exact`. */
  operator?: string | null;
  type?: PropertyFilterType;
  group_type_index?: number | null;
  /** Only honoured inside cohort definitions, as in PostHog. */
  negation?: boolean | null;
}

/** One release condition ("condition set"); conditions are ORed, their properties ANDed. */
export interface FlagCondition {
  properties?: PropertyFilter[] | null;
  /** null or absent means 100. */
  rollout_percentage?: number | null;
  variant?: string | null;
  /** Absent: the flag's own aggregation. null: persons. A number: that group type. */
  aggregation_group_type_index?: number | null;
}

export interface FlagVariant {
  key: string;
  name?: string | null;
  rollout_percentage: number;
}

export interface FlagHoldout {
  id: number;
  exclusion_percentage: number;
}

export interface FlagFilters {
  groups: FlagCondition[];
  multivariate?: { variants: FlagVariant[] } | null;
  /** Keyed by `"true"` for boolean flags, by variant key otherwise; values as stored. */
  payloads?: Record<string, unknown>;
  aggregation_group_type_index?: number | null;
  /** Legacy early-access enrollment condition. */
  super_groups?: FlagCondition[] | null;
  /** Early access: the person property `$feature_enrollment/<key>` decides when it is set. */
  feature_enrollment?: boolean | null;
  holdout?: FlagHoldout | null;
  /** Legacy (2020–2021) flags: properties at the top level and no `groups`. */
  properties?: PropertyFilter[] | null;
}

export interface FeatureFlag {
  id: number;
  key: string;
  name: string;
  filters: FlagFilters;
  active: boolean;
  deleted: boolean;
  ensure_experience_continuity: boolean;
  /** Legacy flags kept the rollout on the model instead of in `filters.groups`. */
  rollout_percentage?: number | null;
}

/** A cohort definition as `local_evaluation` serves it: nested AND/OR groups of filters. */
export interface CohortPropertyGroup {
  type: 'AND' | 'OR' | 'property';
  values: Array<CohortPropertyGroup | PropertyFilter>;
}

export interface FlagEvaluationContext {
  distinctId: string;
  /** The person's properties with the request's `person_properties` already applied on top. */
  personProperties: Record<string, unknown>;
  /** Group type name → group key, from the request's `groups`. */
  groups?: Record<string, string | number>;
  /** Group type name → that group's properties (stored, with request overrides applied). */
  groupProperties?: Record<string, Record<string, unknown>>;
  groupTypeIndexToName?: Record<number, string>;
  /** Ids of the cohorts the person is known to be in (static and precomputed ones). */
  cohortMembership?: ReadonlySet<number>;
  /** Cohort id → definition, for cohorts decided from the person's properties alone. */
  cohortDefinitions?: Record<string, CohortPropertyGroup>;
  /** Flag key → stored hash key (experience continuity), from earlier `$anon_distinct_id`s. */
  hashKeyOverrides?: Record<string, string>;
  /** The request's `$anon_distinct_id`: the hash key of continuity flags with no stored one. */
  anonDistinctId?: string;
  now: Date;
}

export type FlagReasonCode =
  | 'condition_match'
  | 'no_condition_match'
  | 'out_of_rollout_bound'
  | 'no_group_type'
  | 'super_condition_value'
  | 'holdout_condition_value'
  | 'flag_disabled'
  | 'missing_dependency'
  | 'error';

export interface FlagReason {
  code: FlagReasonCode;
  condition_index: number | null;
  description: string;
}

export interface FlagResult {
  key: string;
  enabled: boolean;
  variant: string | null;
  payload: unknown;
  reason: FlagReason;
}

/** The value a flag takes in `/decide` v2/v3 maps and in flag-dependency filters. */
export type FlagValue = boolean | string;
