import type { FlagResult } from '../../core/flags/types';
import type { FlagPlan } from './flag-plan';

/**
 * Results of a snapshot's memoizable flags (see FlagPlan), remembered by their inputs: the
 * distinct id and the values of the person properties they read. They are pure functions of
 * those, so a remembered answer is exactly what evaluating again gives; a flag change makes a new
 * snapshot and drops these. Server SDKs ask `/flags` once per flag read for the same user, and
 * browsers ask again on every page, which is what this serves.
 *
 * Bounded: two generations of at most GENERATION inputs each; when the young one fills up the
 * old one is dropped whole (deleting single oldest keys from a Map costs a scan past every
 * earlier deletion). The few distinct results of each flag are shared between entries, so an
 * entry costs one array of references.
 */
const GENERATION = 5_000;

interface Memo {
  young: Map<string, readonly FlagResult[]>;
  old: Map<string, readonly FlagResult[]>;
  shared: Map<string, FlagResult>;
}

const memos = new WeakMap<FlagPlan, Memo>();

/** Results (and whole lists) handed out to many requests: never changed, so their serialized forms can be kept. */
export const sharedResults = new WeakSet<FlagResult>();
export const sharedLists = new WeakSet<readonly FlagResult[]>();

/** A memoizable flag's payload follows from its outcome (no enrollment), so the outcome names the result. */
const shareKey = (index: number, r: FlagResult) =>
  `${index}|${r.enabled}|${r.variant}|${r.reason.code}|${r.reason.condition_index}|${r.reason.description}`;

/** The memo key: the distinct id, then each read property as JSON, `u` for undefined, empty when absent. */
export function memoInput(plan: FlagPlan, distinctId: string, properties: Record<string, unknown>): string {
  let key = distinctId;
  for (const name of plan.memoKeys) {
    key += '\u0000';
    if (Object.hasOwn(properties, name)) key += JSON.stringify(properties[name]) ?? 'u';
  }
  return key;
}

export function rememberedResults(plan: FlagPlan, input: string, evaluate: () => FlagResult[]): readonly FlagResult[] {
  let memo = memos.get(plan);
  if (!memo) {
    memo = { young: new Map(), old: new Map(), shared: new Map() };
    memos.set(plan, memo);
  }
  const hit = memo.young.get(input) ?? memo.old.get(input);
  if (hit) return hit;
  const results = evaluate().map((result, index) => {
    const key = shareKey(index, result);
    const shared = memo.shared.get(key);
    if (shared) return shared;
    memo.shared.set(key, result);
    sharedResults.add(result);
    return result;
  });
  if (memo.young.size >= GENERATION) {
    memo.old = memo.young;
    memo.young = new Map();
  }
  memo.young.set(input, results);
  sharedLists.add(results);
  return results;
}
