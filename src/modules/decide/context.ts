import type { CohortPropertyGroup } from '../../core/flags/types';
import type { Deps } from '../../deps';
import type { Person } from '../../storage';
import { type CohortSource, cohortSource, loadCohortDefinitions } from '../feature-flags/cohort-source';
import type { FlagPlan } from './flag-plan';
import type { FlagRequest } from './request';

/**
 * The parts of a flag check's context that live outside the flag snapshot: continuity hash keys
 * to store, group properties, and cohorts. Only flags that are never remembered need them.
 */

/** Cohort definitions change rarely and are not ours to invalidate: kept a few seconds, per store. */
const COHORT_TTL_MS = 5_000;
type CohortDefinitions = Promise<Record<string, CohortPropertyGroup>>;
const cohortCaches = new WeakMap<CohortSource, Map<string, { at: number; definitions: CohortDefinitions }>>();

function cachedCohortDefinitions(source: CohortSource, teamId: number, ids: number[]): CohortDefinitions {
  if (!ids.length) return Promise.resolve({});
  let cache = cohortCaches.get(source);
  if (!cache) cohortCaches.set(source, (cache = new Map()));
  const key = `${teamId}:${ids.join(',')}`;
  const hit = cache.get(key);
  if (hit && Date.now() - hit.at < COHORT_TTL_MS) return hit.definitions;
  if (cache.size > 1000) cache.clear();
  const definitions = loadCohortDefinitions(source, teamId, ids);
  cache.set(key, { at: Date.now(), definitions });
  definitions.catch(() => cache.delete(key));
  return definitions;
}

/**
 * `$anon_distinct_id` pins continuity flags to the anonymous id for the persons of both ids, as
 * PostHog's `set_feature_flag_hash_key_overrides` does; existing hash keys are kept.
 */
export async function storeHashKeys(deps: Deps, teamId: number, plan: FlagPlan, req: FlagRequest) {
  if (!req.anonDistinctId || !plan.continuityKeys.length) return;
  const persons = deps.storage.persons;
  const uuids = new Set(
    [req.distinctId!, req.anonDistinctId].map((id) => persons.findByDistinctId(teamId, id)?.uuid).filter((uuid): uuid is string => !!uuid),
  );
  const wanted = Object.fromEntries(plan.continuityKeys.map((key) => [key, req.anonDistinctId!]));
  for (const uuid of uuids) await deps.storage.flags.addHashKeyOverrides(teamId, uuid, wanted);
}

export function groupContext(deps: Deps, teamId: number, req: FlagRequest) {
  const persons = deps.storage.persons;
  const mapping = persons.groupTypeMapping(teamId);
  const groupTypeIndexToName: Record<number, string> = {};
  for (const [name, index] of Object.entries(mapping)) groupTypeIndexToName[index] = name;
  const groupProperties: Record<string, Record<string, unknown>> = {};
  for (const [name, key] of Object.entries(req.groups)) {
    const stored = persons.findGroup(teamId, name, String(key))?.properties;
    groupProperties[name] = { ...stored, ...req.groupProperties[name] };
  }
  return { groupTypeIndexToName, groupProperties };
}

export interface CohortContext {
  cohortDefinitions: Record<string, CohortPropertyGroup>;
  cohortMembership?: ReadonlySet<number>;
}

/** The definitions of the cohorts the flags use, and the person's memberships. */
export async function loadCohorts(deps: Deps, teamId: number, plan: FlagPlan, person: Person | null): Promise<CohortContext | null> {
  const source = cohortSource(deps);
  if (!source) return null;
  const cohorts: CohortContext = { cohortDefinitions: await cachedCohortDefinitions(source, teamId, plan.cohortIds) };
  if (person) cohorts.cohortMembership = await source.cohortIdsForPerson(teamId, person.uuid);
  return cohorts;
}
