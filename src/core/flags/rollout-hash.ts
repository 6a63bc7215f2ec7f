import { sha1Prefix60 } from './sha1';
import type { FeatureFlag } from './types';

/**
 * PostHog's divisor 0xFFFFFFFFFFFFFFF is not representable as a double: Python's float(), Rust's
 * `as f64` and JS all round it to exactly 2^60, so the division below is exact and only the
 * numerator's rounding matters.
 */
const LONG_SCALE = Number(0xfffffffffffffffn);

/** sha1(`${key}.${hashId}${salt}`) as a number in [0, 1]. */
export const hashFlag = (key: string, hashId: string, salt = ''): number => sha1Prefix60(key, '.', hashId, salt) / LONG_SCALE;

/** Holdouts hash without the flag key, so a person is held out of every flag of the experiment. */
export const hashHoldout = (hashId: string): number => sha1Prefix60('holdout-', hashId, '', '') / LONG_SCALE;

/**
 * The flags service answers 0 when there is nothing to hash (an empty distinct id, a group flag
 * without a usable key) instead of hashing `"<key>."`.
 */
const hashIntoBucket = (key: string, hashId: string, salt: string): number =>
  hashId === '' ? 0 : hashFlag(key, hashId, salt);

/** A null rollout means 100%; 100% is decided without hashing, as the flags service does. */
export const isInRollout = (key: string, hashId: string, rolloutPercentage: number | null | undefined): boolean => {
  if (rolloutPercentage === null || rolloutPercentage === undefined || rolloutPercentage === 100) return true;
  return hashIntoBucket(key, hashId, '') <= rolloutPercentage / 100;
};

/**
 * Variants own consecutive slices of [0, 1) in their listed order. The running sum is built with
 * the same floating-point additions as PostHog, so slice edges are bit-identical. Percentages that
 * sum to less than 100 leave a gap whose hashes get no variant (null).
 */
export const variantFor = (flag: Pick<FeatureFlag, 'key' | 'filters'>, hashId: string): string | null => {
  const variants = flag.filters.multivariate?.variants ?? [];
  const hash = hashIntoBucket(flag.key, hashId, 'variant');
  let upperBound = 0;
  for (const variant of variants) {
    upperBound += variant.rollout_percentage / 100;
    if (hash < upperBound) return variant.key;
  }
  return null;
};
