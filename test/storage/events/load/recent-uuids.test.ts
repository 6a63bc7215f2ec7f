import { describe, expect, test } from 'bun:test';
import { RecentUuids } from '../../../../src/storage/events/load/recent-uuids';

const uuid = (n: number) => ({ uuid: `0190a000-0000-7000-8000-${n.toString(16).padStart(12, '0')}` });
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => uuid(from + i));

describe('recent uuids', () => {
  test('new uuids are reported new; any one seen before (or repeated in the same call) is reported seen', () => {
    const r = new RecentUuids(10_000, 4);
    expect(r.addAll(range(0, 5_000))).toBe(false);
    expect(r.addAll(range(5_000, 1_000))).toBe(false);
    expect(r.addAll([uuid(123)])).toBe(true);
    expect(r.addAll([...range(20_000, 50), uuid(4_999)])).toBe(true);
    expect(r.addAll([uuid(90_000), uuid(90_001), uuid(90_000)])).toBe(true);
  });

  test('across rotations every uuid of the covered span is known, and fresh batches are never taken for repeats', () => {
    const r = new RecentUuids(10_000, 4);
    for (let batch = 0; batch < 60; batch++) {
      expect(r.addAll(range(batch * 1_000, 1_000))).toBe(false);
      // Everything among the last 30,000 (3 full generations) is still known.
      for (let n = Math.max(0, batch * 1_000 - 29_000); n < batch * 1_000 + 1_000; n += 997) expect(r.addAll([uuid(n)])).toBe(true);
    }
  });

  test('generation numbers: a uuid added at a generation the filter still holds is known; one from an older generation is forgotten', () => {
    const r = new RecentUuids(100, 4);
    const added: Array<{ gen: number; first: number }> = [];
    for (let batch = 0; batch < 40; batch++) {
      added.push({ gen: r.generation, first: batch * 30 });
      r.addAll(range(batch * 30, 30));
    }
    expect(r.generation).toBe(12); // 1,200 uuids filled 0..11: the next goes to a new one
    expect(r.oldestGeneration).toBe(8);
    let known = 0;
    let forgotten = 0;
    for (const { gen, first } of added) {
      const covered = gen >= r.oldestGeneration; // read before the call: checking adds the uuid
      expect(r.addAll([uuid(first)])).toBe(covered);
      if (covered) known++;
      else forgotten++;
    }
    expect(known).toBeGreaterThan(5);
    expect(forgotten).toBeGreaterThan(20);
  });

  test.each([1, 2, 3, 5, 8])('with %i generations: through every widening and reuse of a generation, a uuid is known exactly while its generation is held; new ones are never taken for repeats', (generations) => {
    const r = new RecentUuids(500, generations);
    const added: Array<{ gen: number; n: number }> = [];
    for (let n = 0; n < 500 * (generations + 3); n += 250) {
      for (const entry of added) {
        // Read before the call: checking adds the uuid again, to the generation it then names.
        const covered = entry.gen >= r.oldestGeneration;
        entry.gen = r.generation;
        expect(r.addAll([uuid(entry.n)])).toBe(covered);
      }
      added.push({ gen: r.generation, n });
      expect(r.addAll(range(n, 250))).toBe(false);
    }
    expect(r.oldestGeneration).toBeGreaterThan(2);
  });
});
