/**
 * A cohort definition after validation: PostHog's property groups (`filters.properties`) or its
 * legacy `groups`, reduced to one tree of AND/OR groups whose leaves are person properties,
 * behavioural conditions and references to other cohorts.
 */

/** Cohort SQL is built with the query compiler's fragments (one SQL-fragment module). */
export type { SqlFragment } from '../query/sql';

/** The person property operators a cohort accepts. */
export const PERSON_OPERATORS = [
  'exact',
  'is_not',
  'icontains',
  'not_icontains',
  'regex',
  'not_regex',
  'gt',
  'gte',
  'lt',
  'lte',
  'is_set',
  'is_not_set',
  'is_date_before',
  'is_date_after',
] as const;

export type PropertyOperator = (typeof PERSON_OPERATORS)[number];

export const TIME_INTERVALS = ['hour', 'day', 'week', 'month', 'year'] as const;
export type TimeInterval = (typeof TIME_INTERVALS)[number];

export interface PropertyCondition {
  key: string;
  value?: unknown;
  operator: PropertyOperator;
}

export interface PersonLeaf extends PropertyCondition {
  type: 'person';
  negation: boolean;
}

/** "Performed `key` in the last `time_value` `time_interval`s", optionally a number of times. */
export interface BehavioralLeaf {
  type: 'behavioral';
  key: string;
  value: 'performed_event' | 'performed_event_multiple';
  event_type: 'events';
  time_value: number;
  time_interval: TimeInterval;
  negation: boolean;
  /** For `performed_event_multiple`: how the count compares with `operator_value`. */
  operator?: 'gte' | 'lte' | 'exact';
  operator_value?: number;
  event_filters?: PropertyCondition[];
}

export interface CohortLeafRef {
  type: 'cohort';
  key: 'id';
  value: number;
  negation: boolean;
}

export type CohortLeaf = PersonLeaf | BehavioralLeaf | CohortLeafRef;

export interface CohortGroup {
  type: 'AND' | 'OR';
  values: CohortNode[];
}

export type CohortNode = CohortGroup | CohortLeaf;

export const isGroup = (node: CohortNode): node is CohortGroup => node.type === 'AND' || node.type === 'OR';

/** Every leaf of a definition, depth first. */
export function leavesOf(node: CohortNode): CohortLeaf[] {
  return isGroup(node) ? node.values.flatMap(leavesOf) : [node];
}

/** Whether computing the definition needs the events relation. */
export const needsEvents = (definition: CohortGroup) => leavesOf(definition).some((leaf) => leaf.type === 'behavioral');

/** The ids of the cohorts a definition refers to. */
export const referencedCohorts = (definition: CohortGroup) =>
  [...new Set(leavesOf(definition).flatMap((leaf) => (leaf.type === 'cohort' ? [leaf.value] : [])))];
