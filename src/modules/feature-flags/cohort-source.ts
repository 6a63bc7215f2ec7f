import { filtersRepresentation } from '../../core/cohorts/definition';
import type { CohortPropertyGroup } from '../../core/flags/types';
import type { Deps } from '../../deps';

/** The part of the cohort store flags use. */
export interface CohortSource {
  getCohort(
    teamId: number,
    id: number,
  ): Promise<{ id: number; filters: Record<string, unknown> | null; groups: unknown[]; deleted: boolean; isStatic: boolean } | null>;
  cohortIdsForPerson(teamId: number, personUuid: string): Promise<Set<number>>;
}

export const cohortSource = (deps: Deps): CohortSource | null => deps.storage.cohorts ?? null;

/** A cohort's definition as PostHog serves it to flags (`cohort.properties.to_dict()`). */
export const cohortProperties = (cohort: { filters: unknown; groups: unknown }): CohortPropertyGroup =>
  filtersRepresentation(cohort.filters, cohort.groups).properties as CohortPropertyGroup;

const isGroup = (value: unknown): value is CohortPropertyGroup =>
  typeof value === 'object' && value !== null && Array.isArray((value as CohortPropertyGroup).values);

/** Cohort ids a definition refers to (`{"type":"cohort","value":<id>}` leaves). */
export function referencedCohortIds(group: CohortPropertyGroup | null | undefined): number[] {
  const ids: number[] = [];
  const visit = (node: unknown) => {
    if (isGroup(node)) return node.values.forEach(visit);
    const leaf = node as { type?: string; value?: unknown } | null;
    if (leaf?.type !== 'cohort') return;
    const id = typeof leaf.value === 'string' && /^\d+$/.test(leaf.value) ? Number(leaf.value) : leaf.value;
    if (typeof id === 'number' && Number.isInteger(id)) ids.push(id);
  };
  if (group) visit(group);
  return ids;
}

/**
 * The live, dynamic cohorts reachable from `ids` (cohorts may refer to cohorts), keyed by id, in
 * PostHog's shape. Static cohorts have no definition to send: membership decides them.
 */
export async function loadCohortDefinitions(source: CohortSource, teamId: number, ids: Iterable<number>) {
  const definitions: Record<string, CohortPropertyGroup> = {};
  const seen = new Set<number>();
  const queue = [...ids];
  while (queue.length && seen.size < 1000) {
    const id = queue.shift()!;
    if (seen.has(id)) continue;
    seen.add(id);
    const cohort = await source.getCohort(teamId, id);
    if (!cohort || cohort.deleted || cohort.isStatic) continue;
    const properties = cohortProperties(cohort);
    definitions[String(id)] = properties;
    queue.push(...referencedCohortIds(properties));
  }
  return definitions;
}
