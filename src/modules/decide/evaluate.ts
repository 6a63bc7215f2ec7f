import { evaluateFlags } from '../../core/flags/evaluate-flags';
import type { CohortPropertyGroup, FlagEvaluationContext, FlagResult } from '../../core/flags/types';
import type { Deps } from '../../deps';
import type { Person, Project, StoredFlag } from '../../storage';
import { type CohortSource, cohortSource, loadCohortDefinitions } from '../feature-flags/cohort-source';
import { type FlagPlan, planFor, selectFlags } from './flag-plan';
import { memoInput, rememberedResults } from './result-memo';
import type { FlagRequest } from './request';

export interface FlagsOutcome {
  results: FlagResult[];
  /** The flags behind `results`, by key (for ids, versions and descriptions). */
  flags: ReadonlyMap<string, StoredFlag>;
  errors: boolean;
}

const EMPTY: FlagsOutcome = { results: [], flags: new Map(), errors: false };

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
async function storeHashKeys(deps: Deps, teamId: number, plan: FlagPlan, req: FlagRequest) {
  if (!req.anonDistinctId || !plan.continuityKeys.length) return;
  const persons = deps.storage.persons;
  const uuids = new Set(
    [req.distinctId!, req.anonDistinctId].map((id) => persons.findByDistinctId(teamId, id)?.uuid).filter((uuid): uuid is string => !!uuid),
  );
  const wanted = Object.fromEntries(plan.continuityKeys.map((key) => [key, req.anonDistinctId!]));
  for (const uuid of uuids) await deps.storage.flags.addHashKeyOverrides(teamId, uuid, wanted);
}

function groupContext(deps: Deps, teamId: number, req: FlagRequest) {
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

async function buildContext(deps: Deps, teamId: number, plan: FlagPlan, flags: readonly StoredFlag[], req: FlagRequest) {
  const overrides = await deps.storage.flags.hashKeyOverrides(teamId);
  const needsCohorts = plan.needsCohorts(flags);
  // Stored hash keys may apply to any flag, so once a project has some, the person is looked up.
  const needsPersons =
    plan.needsPersons(flags) || needsCohorts || overrides.size > 0 || (!!req.anonDistinctId && plan.continuityKeys.length > 0);
  const needsGroups = plan.needsGroups(flags);
  if (needsPersons || needsGroups) await deps.storage.persons.ensureLoaded(teamId);

  const ctx: FlagEvaluationContext = { distinctId: req.distinctId!, personProperties: req.personProperties, groups: req.groups, now: deps.now() };
  if (req.anonDistinctId) ctx.anonDistinctId = req.anonDistinctId;
  let person: Person | null = null;
  if (needsPersons) {
    await storeHashKeys(deps, teamId, plan, req);
    person = deps.storage.persons.findByDistinctId(teamId, req.distinctId!);
    if (person) {
      ctx.personProperties = { ...person.properties, ...req.personProperties };
      const own = overrides.get(person.uuid);
      if (own && Object.keys(own).length) ctx.hashKeyOverrides = own;
    }
  }
  if (needsGroups) Object.assign(ctx, groupContext(deps, teamId, req));
  const source = needsCohorts ? cohortSource(deps) : null;
  if (source) {
    ctx.cohortDefinitions = await cachedCohortDefinitions(source, teamId, plan.cohortIds);
    if (person) ctx.cohortMembership = await source.cohortIdsForPerson(teamId, person.uuid);
  }
  return ctx;
}

/** Results back in the project's flag order, keeping only the requested keys. */
function inFlagOrder(plan: FlagPlan, parts: ReadonlyArray<readonly FlagResult[]>, wanted: ReadonlySet<string> | null): FlagResult[] {
  const slots: Array<FlagResult | undefined> = new Array(plan.live.length);
  for (const part of parts) {
    for (const result of part) if (!wanted || wanted.has(result.key)) slots[plan.position.get(result.key)!] = result;
  }
  return slots.filter((result): result is FlagResult => result !== undefined);
}

/**
 * Evaluate a project's flags for one request. Persons, groups, continuity hash keys and cohorts
 * are read only when the flags being evaluated need them; flags decided by rollout alone touch
 * nothing but the in-memory snapshot. Memoizable flags' results are remembered by their inputs.
 */
export async function evaluateRequest(deps: Deps, project: Project, req: FlagRequest): Promise<FlagsOutcome> {
  if (req.disableFlags) return EMPTY;
  const teamId = project.id;
  const plan = planFor(await deps.storage.flags.forTeam(teamId));
  if (!plan.live.length) return EMPTY;
  const wanted = req.flagKeys === null ? null : new Set(req.flagKeys);
  // Without memoizable flags dependencies may cross: select the requested ones with theirs.
  const split = plan.memoizable.length > 0;
  const others = split ? plan.rest.filter((flag) => !wanted || wanted.has(flag.key)) : selectFlags(plan, req.flagKeys);
  const ctx = await buildContext(deps, teamId, plan, split ? [...others, ...plan.memoizable] : others, req);

  const parts: Array<readonly FlagResult[]> = [others.length ? evaluateFlags(others, ctx) : []];
  // A stored continuity hash key may apply to any flag: such a person is evaluated afresh.
  if (split && ctx.hashKeyOverrides) parts.push(evaluateFlags(plan.memoizable, ctx));
  else if (split) {
    const input = memoInput(plan, ctx.distinctId, ctx.personProperties);
    parts.push(rememberedResults(plan, input, () => evaluateFlags(plan.memoizable, ctx)));
  }
  // When every flag is memoizable the remembered list is the whole answer, already in order.
  const whole = split && !plan.rest.length && !wanted && !ctx.hashKeyOverrides;
  const results = whole ? (parts[1] as FlagResult[]) : inFlagOrder(plan, parts, wanted);
  return { results, flags: plan.byKey, errors: results.some((r) => r.reason.code === 'error') };
}
