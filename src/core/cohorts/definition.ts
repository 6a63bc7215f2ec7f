import { parseLegacyGroups } from './legacy-groups';
import { isObject, parseFilters, type Raw } from './parse-definition';
import type { CohortGroup } from './types';

/** Whether a stored `filters` value is set: PostHog falls back to `groups` when it is empty. */
export const hasFilters = (filters: unknown) => isObject(filters) && Object.keys(filters).length > 0;

/** The definition a cohort is calculated from: its filters, else its legacy groups. */
export const cohortDefinition = (filters: unknown, groups: unknown): CohortGroup =>
  hasFilters(filters) ? parseFilters(filters) : parseLegacyGroups(groups);

/** What PostHog shows as `filters`: the stored ones, or the groups rewritten as property groups. */
export function filtersRepresentation(filters: unknown, groups: unknown): Raw {
  if (hasFilters(filters)) return filters as Raw;
  try {
    const definition = parseLegacyGroups(groups);
    return { properties: definition.values.length ? definition : {} };
  } catch {
    return { properties: {} };
  }
}
