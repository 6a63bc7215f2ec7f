import { flagNeedsCohorts, flagNeedsPersonProperties } from '../../core/flags/evaluate-flags';
import { listConditions, parseDependencyId } from '../../core/flags/match-condition';
import type { PropertyFilter } from '../../core/flags/types';
import type { StoredFlag, TeamFlags } from '../../storage';
import { referencedCohortIds } from '../feature-flags/cohort-source';

/**
 * What a flag check needs to know about a project's flags, worked out once per snapshot of them
 * (the store hands out a new snapshot after every change), so the hot path only reads.
 */
export interface FlagPlan {
  /** Active, live flags in creation order: what `/decide/` evaluates and returns. */
  live: StoredFlag[];
  byKey: ReadonlyMap<string, StoredFlag>;
  byId: ReadonlyMap<number, StoredFlag>;
  /** Flag key → index in `live`. */
  position: ReadonlyMap<string, number>;
  /** Ids of the flags a flag depends on (flag-value filters), for `flag_keys_to_evaluate`. */
  dependencies: ReadonlyMap<number, number[]>;
  needsPersons: (flags: readonly StoredFlag[]) => boolean;
  needsGroups: (flags: readonly StoredFlag[]) => boolean;
  needsCohorts: (flags: readonly StoredFlag[]) => boolean;
  continuityKeys: string[];
  cohortIds: number[];
  /**
   * Flags whose answer is a pure function of the distinct id and the values of `memoKeys` among
   * the person's properties: no groups, cohorts, continuity, dates relative to now, early-access
   * enrollment, or dependencies. Their results may be remembered (see result-memo). Empty when
   * some flag depends on another, so this half never needs the other's values.
   */
  memoizable: StoredFlag[];
  /** The person property keys the memoizable flags read, sorted. */
  memoKeys: string[];
  /** Whether some memoizable flag reads person properties (else the person is not looked up for them). */
  memoNeedsPersons: boolean;
  /** The other live flags, evaluated on every request. */
  rest: StoredFlag[];
}

const DATE_OPERATORS = new Set(['is_date_before', 'is_date_after', 'is_date_exact']);

const filtersOf = (flag: StoredFlag): PropertyFilter[] => listConditions(flag).flatMap((condition) => condition.properties ?? []);

const usesGroups = (flag: StoredFlag): boolean =>
  (flag.filters.aggregation_group_type_index ?? null) !== null ||
  listConditions(flag).some((condition) => (condition.aggregation_group_type_index ?? null) !== null) ||
  filtersOf(flag).some((filter) => filter.type === 'group');

/** Malformed stored filters must not take the whole check down: the evaluator reports them. */
const safely = <T>(fn: () => T, fallback: T): T => {
  try {
    return fn();
  } catch {
    return fallback;
  }
};

const isMemoizable = (flag: StoredFlag, groups: Set<StoredFlag>, cohorts: Set<StoredFlag>): boolean =>
  !flag.ensure_experience_continuity &&
  !groups.has(flag) &&
  !cohorts.has(flag) &&
  flag.filters.feature_enrollment !== true &&
  !(flag.filters.super_groups ?? []).length &&
  safely(() => filtersOf(flag).every((filter) => !DATE_OPERATORS.has(filter.operator ?? '')), false);

function buildPlan(team: TeamFlags): FlagPlan {
  const live = team.flags.filter((flag) => flag.active && !flag.deleted);
  const persons = new Set(live.filter((flag) => safely(() => flagNeedsPersonProperties(flag), true)));
  const groups = new Set(live.filter((flag) => safely(() => usesGroups(flag), true)));
  const cohorts = new Set(live.filter((flag) => safely(() => flagNeedsCohorts(flag), false)));
  const dependencies = new Map(
    live.map((flag) => [
      flag.id,
      safely(() => filtersOf(flag).filter((f) => f.type === 'flag').map(parseDependencyId), []).filter((id): id is number => id !== null),
    ]),
  );
  const independent = [...dependencies.values()].every((ids) => ids.length === 0);
  const memoizable = new Set(independent ? live.filter((flag) => isMemoizable(flag, groups, cohorts)) : []);
  const memoKeys = [...new Set([...memoizable].flatMap((flag) => filtersOf(flag).map((filter) => String(filter.key))))].sort();
  return {
    live,
    byKey: new Map(live.map((flag) => [flag.key, flag])),
    byId: new Map(live.map((flag) => [flag.id, flag])),
    position: new Map(live.map((flag, index) => [flag.key, index])),
    dependencies,
    needsPersons: (flags) => flags.some((flag) => persons.has(flag)),
    needsGroups: (flags) => flags.some((flag) => groups.has(flag)),
    needsCohorts: (flags) => flags.some((flag) => cohorts.has(flag)),
    continuityKeys: live.filter((flag) => flag.ensure_experience_continuity).map((flag) => flag.key),
    cohortIds: [...new Set([...cohorts].flatMap((flag) => safely(() => referencedCohortIds({ type: 'OR', values: filtersOf(flag) }), [])))],
    memoizable: live.filter((flag) => memoizable.has(flag)),
    memoKeys,
    memoNeedsPersons: [...memoizable].some((flag) => persons.has(flag)),
    rest: live.filter((flag) => !memoizable.has(flag)),
  };
}

const plans = new WeakMap<TeamFlags, FlagPlan>();

export function planFor(team: TeamFlags): FlagPlan {
  let plan = plans.get(team);
  if (!plan) {
    plan = buildPlan(team);
    plans.set(team, plan);
  }
  return plan;
}

/** The requested flags plus every flag they depend on, in creation order. */
export function selectFlags(plan: FlagPlan, keys: readonly string[] | null): StoredFlag[] {
  if (keys === null) return plan.live;
  const wanted = new Set<number>();
  const visit = (id: number) => {
    if (wanted.has(id) || !plan.byId.has(id)) return;
    wanted.add(id);
    for (const dependency of plan.dependencies.get(id) ?? []) visit(dependency);
  };
  for (const key of keys) {
    const flag = plan.byKey.get(key);
    if (flag) visit(flag.id);
  }
  return plan.live.filter((flag) => wanted.has(flag.id));
}
