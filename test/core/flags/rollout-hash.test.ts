import { describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { hashFlag, hashHoldout, isInRollout, variantFor } from '../../../src/core/flags/rollout-hash';
import type { FlagFilters } from '../../../src/core/flags/types';

const multivariate = (variants: Array<[string, number]>): { key: string; filters: FlagFilters } => ({
  key: 'multivariate-flag',
  filters: {
    groups: [],
    multivariate: { variants: variants.map(([key, rollout_percentage]) => ({ key, rollout_percentage })) },
  },
});

describe('hashFlag: PostHog published vectors', () => {
  // posthog test_decide / test_flag_matching: beta-feature at 50%.
  test.each([
    ['example_id', 0.2093039334578348, true],
    ['other_id', 0.4345580748910055, true],
    ['another_id', 0.9656963840044174, false],
  ])('beta-feature.%s hashes to %d (in a 50%% rollout: %p)', (id, hash, inRollout) => {
    expect(hashFlag('beta-feature', id)).toBe(hash);
    expect(isInRollout('beta-feature', id, 50)).toBe(inRollout);
  });

  test('the variant salt is appended to the identifier', () => {
    expect(hashFlag('multivariate-flag', 'example_id', 'variant')).toBe(0.4099865814300066);
  });

  test.each([
    ['example_id', 'first-variant'],
    ['other_id', 'third-variant'],
  ])('multivariate-flag 50/25/25: %s → %s', (id, variant) => {
    const flag = multivariate([
      ['first-variant', 50],
      ['second-variant', 25],
      ['third-variant', 25],
    ]);
    expect(variantFor(flag, id)).toBe(variant);
  });
});

describe('hashFlag: 60-bit prefixes round like Python and Rust', () => {
  // Expected values are Python's int(hex[:15], 16) / float(0xFFFFFFFFFFFFFFF). Bun's parseInt
  // rounds these prefixes differently, which is why the prefix is built from the digest's words.
  test.each([
    ['distinct_id_2', 0.3720434350239052],
    ['distinct_id_64', 0.4309913816125088],
    ['distinct_id_129', 0.23455534296648775],
    ['distinct_id_135', 0.48769772966918895],
    ['distinct_id_154', 0.3038313973688815],
    ['distinct_id_164', 0.4193087748174196],
  ])('simple-flag.%s → %d', (id, hash) => {
    expect(hashFlag('simple-flag', id)).toBe(hash);
  });

  // Prefixes exactly half-way between two doubles round to the even one.
  test.each([
    ['distinct_id_35', 0.8703071403399245],
    ['distinct_id_171', 0.7404820226645294],
    ['distinct_id_823', 0.5442397676495929],
    ['distinct_id_1086', 0.6925815841944889],
  ])('tie simple-flag.%s → %d', (id, hash) => {
    expect(hashFlag('simple-flag', id)).toBe(hash);
  });
});

describe('isInRollout', () => {
  test.each([
    ['null is 100%', null, 'another_id', true],
    ['undefined is 100%', undefined, 'another_id', true],
    ['100 is everyone', 100, 'another_id', true],
    ['0 is no one', 0, 'example_id', false],
    ['a rollout equal to the hash is in (hash <= pct / 100)', 20.93039334578348, 'example_id', true],
    ['one step under the hash is out', 20.93039334578347, 'example_id', false],
    ['an empty identifier hashes to 0 and is in any rollout', 0, '', true],
  ] as const)('%s', (_name, percentage, id, expected) => {
    expect(isInRollout('beta-feature', id, percentage)).toBe(expected);
  });
});

describe('variantFor', () => {
  test('variants summing to less than 100 leave a gap with no variant', () => {
    const flag = multivariate([['only', 10]]);
    expect(variantFor(flag, 'example_id')).toBeNull();
  });

  test('a 0% variant never wins and the next one takes its slice', () => {
    const flag = multivariate([
      ['never', 0],
      ['always', 100],
    ]);
    expect(variantFor(flag, 'example_id')).toBe('always');
  });

  test('a flag without variants has no variant', () => {
    expect(variantFor({ key: 'f', filters: { groups: [] } }, 'example_id')).toBeNull();
  });

  test('an empty identifier hashes to 0 and gets the first variant', () => {
    const flag = multivariate([
      ['a', 1],
      ['b', 99],
    ]);
    expect(variantFor(flag, '')).toBe('a');
  });
});

describe('hashHoldout', () => {
  test('hashes "holdout-<id>" with no flag key (value from Python)', () => {
    expect(hashHoldout('example_id')).toBe(0.9402003475831224);
  });
});

describe('the SHA-1 in plain JS agrees with node:crypto', () => {
  // What PostHog computes: the first 15 hex digits of sha1 over 0xFFFFFFFFFFFFFFF (rounded as above).
  const reference = (text: string) => {
    const digest = createHash('sha1').update(text, 'utf8').digest();
    return (digest.readUInt32BE(0) * 2 ** 28 + (digest.readUInt32BE(4) >>> 4)) / Number(0xfffffffffffffffn);
  };
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  const alphabet = ['a', 'Z', '0', '_', '-', '.', ' ', 'é', '€', '😀', '\ud800', '\udc00', '\u0000', '\u007f', '\u0080', '\u07ff', '\u0800'];
  const ids = Array.from({ length: 3000 }, (_, i) => {
    let id = '';
    // Lengths across one, two and three 64-byte blocks, and the 55/56-byte padding edge.
    const length = i % 140;
    for (let j = 0; j < length; j++) id += i % 2 ? String.fromCharCode(33 + Math.floor(random() * 90)) : alphabet[Math.floor(random() * alphabet.length)];
    return id;
  });

  test('hashFlag, with and without a salt, for ASCII, multi-byte and lone-surrogate ids of every length', () => {
    const mismatches = ids.filter((id) => hashFlag('flag-key', id) !== reference(`flag-key.${id}`) || hashFlag('k', id, 'variant') !== reference(`k.${id}variant`));
    expect(mismatches).toEqual([]);
  });

  test('hashHoldout', () => {
    expect(ids.filter((id) => hashHoldout(id) !== reference(`holdout-${id}`))).toEqual([]);
  });

  test('a very long id (several blocks, a grown buffer) and then a short one again', () => {
    const long = 'x'.repeat(10_000) + '€';
    expect(hashFlag('f', long)).toBe(reference(`f.${long}`));
    expect(hashFlag('beta-feature', 'example_id')).toBe(0.2093039334578348);
  });
});
