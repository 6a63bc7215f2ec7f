import type { FlagResult } from '../../core/flags/types';
import type { FlagPlan } from './flag-plan';

/**
 * Results of a snapshot's memoizable flags (see FlagPlan), remembered by their inputs: the
 * distinct id and the values of the person properties they read. They are pure functions of
 * those, so a remembered answer is exactly what evaluating again gives; a flag change makes a new
 * snapshot and drops these. Server SDKs ask `/flags` once per flag read for the same user, and
 * browsers ask again on every page, which is what this serves.
 *
 * Bounded: two generations of at most GENERATION distinct ids each; when the young one fills up the
 * old one is dropped whole (deleting single oldest keys from a Map costs a scan past every
 * earlier deletion). The few distinct results of each flag are shared between entries, so an
 * entry costs one array of references.
 */
const GENERATION = 5_000;
/** Distinct results kept per flag for sharing; a flag with more (a malformed one) shares no more. */
const SHARED_PER_FLAG = 16;

/** A remembered answer: the property values it was worked out from (see `readInputs`) and the results. */
interface Entry {
  inputs: unknown[];
  results: readonly FlagResult[];
}

interface Memo {
  /** By distinct id: the latest inputs seen for each. */
  young: Map<string, Entry>;
  old: Map<string, Entry>;
  /** Per memoizable flag (by position), its distinct results so far. */
  shared: FlagResult[][];
}

const memos = new WeakMap<FlagPlan, Memo>();
/** The same memos, to be reached without their plan when a person is deleted (dead ones pruned as memos are made). */
const live = new Set<WeakRef<Memo>>();
const PRUNE_AT = 64;

/**
 * Drop what is remembered for these distinct ids (a deleted person's), in every project's memo:
 * the entries hold the person's property values. An answer asked for again is evaluated anew,
 * as for anyone not remembered.
 */
export function forgetDistinctIds(distinctIds: readonly string[]): void {
  for (const ref of live) {
    const memo = ref.deref();
    if (!memo) {
      live.delete(ref);
      continue;
    }
    for (const id of distinctIds) {
      memo.young.delete(id);
      memo.old.delete(id);
    }
  }
}

function track(memo: Memo): void {
  if (live.size >= PRUNE_AT) for (const ref of live) if (!ref.deref()) live.delete(ref);
  live.add(new WeakRef(memo));
}

/** Results (and whole lists) handed out to many requests: never changed, so their serialized forms can be kept. */
export const sharedResults = new WeakSet<FlagResult>();
export const sharedLists = new WeakSet<readonly FlagResult[]>();

/** A memoizable flag's payload follows from its outcome (no enrollment), so the outcome names the result. */
const sameOutcome = (a: FlagResult, b: FlagResult) =>
  a.key === b.key &&
  a.enabled === b.enabled &&
  a.variant === b.variant &&
  a.reason.code === b.reason.code &&
  a.reason.condition_index === b.reason.condition_index &&
  a.reason.description === b.reason.description;

/** An absent property (as opposed to one that is present and undefined). */
const ABSENT = Symbol('absent');

/** Objects and arrays are compared by their JSON text; everything else by identity. */
class JsonInput {
  constructor(readonly text: string | undefined) {}
}

const inputOf = (value: unknown): unknown => (typeof value === 'object' && value !== null ? new JsonInput(JSON.stringify(value)) : value);

const sameInput = (remembered: unknown, value: unknown): boolean =>
  remembered instanceof JsonInput ? typeof value === 'object' && value !== null && remembered.text === JSON.stringify(value) : remembered === value;

/** The read property's value as the evaluator sees it: the request's `person_properties` over the stored person's. */
const valueOf = (name: string, given: Record<string, unknown>, stored: Record<string, unknown> | undefined): unknown =>
  Object.hasOwn(given, name) ? given[name] : stored && Object.hasOwn(stored, name) ? stored[name] : ABSENT;

/** Whether `entry` was worked out from the same values of the read properties. */
function matches(plan: FlagPlan, entry: Entry, given: Record<string, unknown>, stored: Record<string, unknown> | undefined): boolean {
  const keys = plan.memoKeys;
  for (let i = 0; i < keys.length; i++) if (!sameInput(entry.inputs[i], valueOf(keys[i], given, stored))) return false;
  return true;
}

function share(memo: Memo, index: number, result: FlagResult): FlagResult {
  const known = (memo.shared[index] ??= []);
  for (const candidate of known) if (sameOutcome(candidate, result)) return candidate;
  if (known.length >= SHARED_PER_FLAG) return result;
  known.push(result);
  sharedResults.add(result);
  return result;
}

/**
 * The memoizable flags' results for this distinct id and these properties (`given`: the
 * request's, over `stored`: the stored person's): remembered when the same distinct id was last
 * seen with the same values of the properties they read, else `evaluate()`d and remembered.
 * Found without merging the two property objects or building any key text: a remembered answer
 * needs nothing else.
 */
export function rememberedResults(
  plan: FlagPlan,
  distinctId: string,
  given: Record<string, unknown>,
  stored: Record<string, unknown> | undefined,
  evaluate: () => FlagResult[],
): readonly FlagResult[] {
  let memo = memos.get(plan);
  if (!memo) {
    memo = { young: new Map(), old: new Map(), shared: [] };
    memos.set(plan, memo);
    track(memo);
  }
  const hit = memo.young.get(distinctId) ?? memo.old.get(distinctId);
  if (hit && matches(plan, hit, given, stored)) return hit.results;
  const results = evaluate();
  for (let index = 0; index < results.length; index++) results[index] = share(memo, index, results[index]);
  if (memo.young.size >= GENERATION) {
    memo.old = memo.young;
    memo.young = new Map();
  }
  const inputs = plan.memoKeys.map((name) => inputOf(valueOf(name, given, stored)));
  memo.young.set(distinctId, { inputs, results });
  sharedLists.add(results);
  return results;
}
