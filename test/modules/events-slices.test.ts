import { describe, expect, test } from 'bun:test';
import { planSlices } from '../../src/modules/events/export-plan';

const H = 3_600_000;
const buckets = [
  { bucket: 0, n: 40 },
  { bucket: H, n: 70 },
  { bucket: 3 * H, n: 10 },
  { bucket: 4 * H, n: 100 },
];

describe('planSlices (export slices from hourly counts)', () => {
  test('newest first, about `target` rows a slice, clipped to the window', () => {
    expect(planSlices(buckets, { bottom: 1000, top: 4 * H + 60_000 }, 'DESC', null, 100)).toEqual([
      { from: 4 * H, to: 4 * H + 60_000, limit: null },
      { from: 1000, to: 4 * H, limit: null },
    ]);
  });

  test('ascending', () => {
    expect(planSlices(buckets, { bottom: null, top: 5 * H }, 'ASC', null, 100)).toEqual([
      { from: 0, to: 2 * H, limit: null },
      { from: 3 * H, to: 5 * H, limit: null },
    ]);
  });

  test('a limit ends the plan with the hour that reaches it, alone, with the rows still needed', () => {
    expect(planSlices(buckets, { bottom: null, top: 5 * H }, 'DESC', 150, 100)).toEqual([
      { from: 4 * H, to: 5 * H, limit: null },
      { from: 3 * H, to: 4 * H, limit: null },
      { from: H, to: 2 * H, limit: 40 },
    ]);
    expect(planSlices(buckets, { bottom: null, top: 5 * H }, 'DESC', 100, 100)).toEqual([{ from: 4 * H, to: 5 * H, limit: 100 }]);
  });

  test('the first slices are smaller, doubling up to the target', () => {
    const hours = Array.from({ length: 12 }, (_, i) => ({ bucket: i * H, n: 10 }));
    const sizes = planSlices(hours, { bottom: null, top: 12 * H }, 'DESC', null, 40, 10).map((s) => (s.to - s.from) / H);
    expect(sizes).toEqual([1, 2, 4, 4, 1]);
  });

  test('no rows, no slices', () => {
    expect(planSlices([], { bottom: null, top: 1 }, 'DESC', null)).toEqual([]);
  });
});
