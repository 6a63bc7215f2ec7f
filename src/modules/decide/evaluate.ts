import { evaluateFlags } from '../../core/flags/evaluate-flags';
import type { FlagEvaluationContext, FlagResult } from '../../core/flags/types';
import type { Deps } from '../../deps';
import type { HashKeyOverrides, Person, Project, StoredFlag } from '../../storage';
import { type CohortContext, groupContext, loadCohorts, storeHashKeys } from './context';
import { type FlagPlan, planFor, selectFlags } from './flag-plan';
import { rememberedResults, sharedLists } from './result-memo';
import type { FlagRequest } from './request';

export interface FlagsOutcome {
  results: FlagResult[];
  /** The flags behind `results`, by key (for ids, versions and descriptions). */
  flags: ReadonlyMap<string, StoredFlag>;
  errors: boolean;
}

const EMPTY: FlagsOutcome = { results: [], flags: new Map(), errors: false };
const NO_RESULTS: readonly FlagResult[] = [];

/** Which flags a request evaluates and what of the person that takes, decided before anything is looked up. */
interface Selection {
  plan: FlagPlan;
  overrides: HashKeyOverrides;
  /** `flag_keys_to_evaluate`, when given. */
  wanted: ReadonlySet<string> | null;
  /** Whether the memoizable flags are evaluated apart (remembered) from the others. */
  split: boolean;
  /** The flags evaluated on every request. */
  others: readonly StoredFlag[];
  persons: boolean;
  groups: boolean;
  cohorts: boolean;
}

function select(plan: FlagPlan, overrides: HashKeyOverrides, req: FlagRequest): Selection {
  const wanted = req.flagKeys === null ? null : new Set(req.flagKeys);
  // Without memoizable flags dependencies may cross: select the requested ones with theirs.
  const split = plan.memoizable.length > 0;
  const others = !split ? selectFlags(plan, req.flagKeys) : wanted ? plan.rest.filter((flag) => wanted.has(flag.key)) : plan.rest;
  // Memoizable flags never read groups or cohorts (see FlagPlan).
  const cohorts = others.length > 0 && plan.needsCohorts(others);
  // Stored hash keys may apply to any flag, so once a project has some, the person is looked up.
  const persons =
    (split && plan.memoNeedsPersons) ||
    (others.length > 0 && plan.needsPersons(others)) ||
    cohorts ||
    overrides.size > 0 ||
    (!!req.anonDistinctId && plan.continuityKeys.length > 0);
  return { plan, overrides, wanted, split, others, persons, groups: others.length > 0 && plan.needsGroups(others), cohorts };
}

/** The stored person (when the flags need one) and the continuity hash keys stored for them. */
function findPerson(deps: Deps, teamId: number, selection: Selection, req: FlagRequest) {
  if (!selection.persons) return { person: null, hashKeys: undefined };
  const person = deps.storage.persons.findByDistinctId(teamId, req.distinctId!);
  const own = person && selection.overrides.size > 0 ? selection.overrides.get(person.uuid) : undefined;
  return { person, hashKeys: own && Object.keys(own).length ? own : undefined };
}

/** Results back in the project's flag order, keeping only the requested keys. */
function inFlagOrder(plan: FlagPlan, parts: ReadonlyArray<readonly FlagResult[]>, wanted: ReadonlySet<string> | null): FlagResult[] {
  const slots: Array<FlagResult | undefined> = new Array(plan.live.length);
  for (const part of parts) {
    for (const result of part) if (!wanted || wanted.has(result.key)) slots[plan.position.get(result.key)!] = result;
  }
  return slots.filter((result): result is FlagResult => result !== undefined);
}

/** Whether some result is an evaluation error; remembered lists are checked once. */
const checkedLists = new WeakMap<readonly FlagResult[], boolean>();
function hasErrors(results: readonly FlagResult[]): boolean {
  const known = checkedLists.get(results);
  if (known !== undefined) return known;
  const errors = results.some((result) => result.reason.code === 'error');
  if (sharedLists.has(results)) checkedLists.set(results, errors);
  return errors;
}

/**
 * Evaluate with everything at hand. The context (the person's properties merged with the
 * request's, groups, cohorts) is built only when something is evaluated: a remembered answer
 * needs none of it.
 */
function evaluateSelection(
  deps: Deps,
  teamId: number,
  selection: Selection,
  req: FlagRequest,
  person: Person | null,
  hashKeys: Record<string, string> | undefined,
  cohorts: CohortContext | null,
): FlagsOutcome {
  const { plan, split, others, wanted } = selection;
  let ctx: FlagEvaluationContext | undefined;
  const context = (): FlagEvaluationContext => {
    if (ctx) return ctx;
    ctx = {
      distinctId: req.distinctId!,
      personProperties: person ? { ...person.properties, ...req.personProperties } : req.personProperties,
      groups: req.groups,
      now: deps.now(),
    };
    if (req.anonDistinctId) ctx.anonDistinctId = req.anonDistinctId;
    if (hashKeys) ctx.hashKeyOverrides = hashKeys;
    if (selection.groups) Object.assign(ctx, groupContext(deps, teamId, req));
    if (cohorts) Object.assign(ctx, cohorts);
    return ctx;
  };

  const rest = others.length ? evaluateFlags(others, context()) : NO_RESULTS;
  let memoized: readonly FlagResult[] = NO_RESULTS;
  // A stored continuity hash key may apply to any flag: such a person is evaluated afresh.
  if (split && hashKeys) memoized = evaluateFlags(plan.memoizable, context());
  else if (split) memoized = rememberedResults(plan, req.distinctId!, req.personProperties, person?.properties, () => evaluateFlags(plan.memoizable, context()));
  // When every flag is memoizable the remembered list is the whole answer, already in order.
  const whole = split && !plan.rest.length && !wanted && !hashKeys;
  const results = whole ? (memoized as FlagResult[]) : inFlagOrder(plan, [rest, memoized], wanted);
  return { results, flags: plan.byKey, errors: hasErrors(results) };
}

/**
 * How long a flag check waits for capture requests of its user still being processed (their
 * person changes): long enough for the usual milliseconds, short enough that a backlog under a
 * burst never holds a check for long (it then answers from the persons as they are).
 */
const INTAKE_WAIT_MS = 500;

const idsOf = (req: FlagRequest): string[] => [req.distinctId, req.anonDistinctId].filter((id): id is string => !!id);

/** The same, loading first whatever is not in memory yet. */
async function loadAndEvaluate(deps: Deps, project: Project, req: FlagRequest): Promise<FlagsOutcome> {
  const teamId = project.id;
  const plan = planFor(await deps.storage.flags.forTeam(teamId));
  if (!plan.live.length) return EMPTY;
  const selection = select(plan, await deps.storage.flags.hashKeyOverrides(teamId), req);
  if (selection.persons || selection.groups) await deps.storage.persons.ensureLoaded(teamId);
  // Events are processed behind their 200: wait (briefly) for those naming this user.
  if (selection.persons) await deps.storage.events.awaitIntake(teamId, idsOf(req), INTAKE_WAIT_MS);
  if (selection.persons) await storeHashKeys(deps, teamId, plan, req);
  const { person, hashKeys } = findPerson(deps, teamId, selection, req);
  const cohorts = selection.cohorts ? await loadCohorts(deps, teamId, plan, person) : null;
  return evaluateSelection(deps, teamId, selection, req, person, hashKeys, cohorts);
}

/**
 * Evaluate a project's flags for one request. Persons, groups, continuity hash keys and cohorts
 * are read only when the flags being evaluated need them; flags decided by rollout alone touch
 * nothing but the in-memory snapshot. Memoizable flags' results are remembered by their inputs.
 *
 * Synchronous when the flags, hash keys and (if needed) persons are already in memory and there
 * is nothing to store or load: a check then costs no trip through the event loop. Otherwise a
 * promise.
 */
export function evaluateRequest(deps: Deps, project: Project, req: FlagRequest): FlagsOutcome | Promise<FlagsOutcome> {
  if (req.disableFlags) return EMPTY;
  const teamId = project.id;
  const store = deps.storage.flags;
  const team = store.cachedForTeam(teamId);
  const overrides = store.cachedHashKeyOverrides(teamId);
  if (!team || !overrides) return loadAndEvaluate(deps, project, req);
  const plan = planFor(team);
  if (!plan.live.length) return EMPTY;
  const selection = select(plan, overrides, req);
  const storesHashKeys = selection.persons && !!req.anonDistinctId && plan.continuityKeys.length > 0;
  const loaded = !(selection.persons || selection.groups) || deps.storage.persons.isLoaded(teamId);
  const pending = selection.persons && deps.storage.events.intakePending(teamId, idsOf(req));
  if (!loaded || storesHashKeys || selection.cohorts || pending) return loadAndEvaluate(deps, project, req);
  const { person, hashKeys } = findPerson(deps, teamId, selection, req);
  return evaluateSelection(deps, teamId, selection, req, person, hashKeys, null);
}
