import { describe, expect, test } from 'bun:test';
import { MemoryGuard, startMemoryGuard, TIGHT_FOR_MS, tightFor, triggerFor } from '../src/memory-guard';
import { createAppMetrics } from '../src/metrics';

const MB = 1024 * 1024;

/** A process whose resident size and main-thread bytes the test sets; a collection brings the latter down to what is live. */
function fakeProcess(o: { resident: number; js: number; live: number }) {
  const state = { ...o, collections: 0 };
  const guard = new MemoryGuard({
    triggerBytes: 800 * MB,
    minGarbageBytes: 128 * MB,
    read: () => ({ residentBytes: state.resident, jsBytes: state.js }),
    collect: () => {
      state.collections++;
      state.resident -= state.js - state.live;
      state.js = state.live;
    },
  });
  return { guard, state };
}

describe('MemoryGuard', () => {
  test('memory is tight from a look past tightBytes until TIGHT_FOR_MS after the last such look (30 s), on its clock', () => {
    let now = 1_000_000;
    let resident = 500 * MB;
    const guard = new MemoryGuard({ triggerBytes: 800 * MB, tightBytes: 600 * MB, minGarbageBytes: 128 * MB, now: () => now, read: () => ({ residentBytes: resident, jsBytes: 0 }), collect: () => undefined });
    const looks: boolean[] = [];
    const look = () => {
      guard.check();
      looks.push(guard.tight());
    };
    look(); // below: not tight
    resident = 650 * MB;
    look(); // past: tight
    resident = 400 * MB;
    now += 10_000;
    look(); // back under, 10 s later: still tight
    now += 15_000;
    resident = 700 * MB;
    look(); // past again at 25 s: tight from here
    resident = 300 * MB;
    now += TIGHT_FOR_MS;
    look(); // 30 s after that look: still tight
    now += 1;
    look(); // then not
    expect(TIGHT_FOR_MS).toBe(30_000);
    expect(looks).toEqual([false, true, true, true, true, false]);
    // Without tightBytes, never.
    const never = new MemoryGuard({ triggerBytes: 800 * MB, minGarbageBytes: 128 * MB, now: () => now, read: () => ({ residentBytes: 2048 * MB, jsBytes: 0 }), collect: () => undefined });
    never.check();
    expect(never.tight()).toBe(false);
  });

  test('collects once the process is past the trigger with garbage worth collecting, and not again until as much has gathered', () => {
    const { guard, state } = fakeProcess({ resident: 600 * MB, js: 80 * MB, live: 80 * MB });
    expect(guard.check()).toBe(false); // below the trigger, the low mark is 80 MB

    state.js = 400 * MB;
    state.resident = 750 * MB;
    expect(guard.check()).toBe(false); // much garbage, but below the trigger
    expect(state.collections).toBe(0);

    state.resident = 920 * MB;
    expect(guard.check()).toBe(true);
    expect(state).toEqual({ resident: 600 * MB, js: 80 * MB, live: 80 * MB, collections: 1 });

    // Past the trigger again (DuckDB grew), with less than 128 MB gathered since: nothing.
    state.resident = 900 * MB;
    state.js = 200 * MB;
    expect(guard.check()).toBe(false);
    state.js = 209 * MB;
    expect(guard.check()).toBe(true);
    expect(state.collections).toBe(2);
  });

  test('a large live heap past the trigger is not collected over and over', () => {
    const { guard, state } = fakeProcess({ resident: 950 * MB, js: 500 * MB, live: 450 * MB });
    // The first look sets the low mark at what it sees: nothing has gathered since.
    expect(guard.check()).toBe(false);
    state.js = 640 * MB;
    state.resident = 1_090 * MB;
    expect(guard.check()).toBe(true);
    expect(state.js).toBe(450 * MB);
    for (let i = 0; i < 10; i++) expect(guard.check()).toBe(false);
    expect(state.collections).toBe(1);
  });

  test('says when the process passes the trigger and when it is back under, once each time, whether it collects or not', () => {
    const told: boolean[] = [];
    const state = { resident: 600 * MB, js: 80 * MB };
    const guard = new MemoryGuard({
      triggerBytes: 800 * MB,
      minGarbageBytes: 128 * MB,
      read: () => ({ residentBytes: state.resident, jsBytes: state.js }),
      collect: () => {},
      onPastTrigger: (past) => told.push(past),
    });
    const looks = (resident: number) => {
      state.resident = resident * MB;
      guard.check();
    };
    looks(600);
    looks(700);
    expect(told).toEqual([]);
    looks(900); // past, with nothing worth collecting: still told
    looks(950);
    expect(told).toEqual([true]);
    looks(800); // at the trigger is not past it
    looks(790);
    expect(told).toEqual([true, false]);
    looks(801);
    expect(told).toEqual([true, false, true]);
  });

  test("JavaScriptCore's own collections lower the mark the garbage is counted from", () => {
    const { guard, state } = fakeProcess({ resident: 700 * MB, js: 300 * MB, live: 60 * MB });
    expect(guard.check()).toBe(false);
    state.js = 60 * MB; // collected by JavaScriptCore between two looks
    state.resident = 500 * MB;
    expect(guard.check()).toBe(false);
    state.js = 200 * MB; // 140 MB over the new low mark
    state.resident = 850 * MB;
    expect(guard.check()).toBe(true);
    expect(state.collections).toBe(1);
  });
});

/**
 * `count` MB of buffers, held (so JavaScriptCore does not collect them as they are made) and
 * then let go; the main thread's heap and buffers (`jsBytes`) before that. Only the
 * holder refers to them, so no stack slot of the test keeps them alive.
 */
const holder: { buffers: Uint8Array[] | null } = { buffers: null };
const jsBytes = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};
function makeGarbage(count: number): number {
  holder.buffers = Array.from({ length: count }, () => new Uint8Array(MB).fill(1));
  const held = jsBytes();
  holder.buffers = null;
  return held;
}

describe('startMemoryGuard', () => {
  test("reads this process's figures and collects its heap: garbage past the trigger is freed and counted", () => {
    const metrics = createAppMetrics();
    // A cap of one byte: the process is always past the trigger, so only the garbage decides.
    const { guard, stop } = startMemoryGuard(1, metrics);
    try {
      Bun.gc(true);
      expect(guard.check()).toBe(false); // the low mark: what is live now
      // JavaScriptCore's own collector may free the garbage between its making and the look (the
      // look then rightly finds none): made again, a few times at most.
      let held = 0;
      let collected = false;
      for (let attempt = 0; attempt < 5 && !collected; attempt++) {
        held = makeGarbage(160);
        collected = guard.check();
      }
      expect(collected).toBe(true);
      expect(metrics.forcedCollections).toBe(1);
      expect(held - jsBytes()).toBeGreaterThan(120 * MB);
      expect(guard.check()).toBe(false);
      expect(metrics.forcedCollections).toBe(1);
    } finally {
      stop();
    }
  });

  test("the trigger is 80% of the process's budget, twice DuckDB's cap (DUCKDB_MEMORY_LIMIT as DuckDB reads it back)", () => {
    expect(triggerFor(512e6)).toBe(819.2e6);
    expect(triggerFor(4 * 2 ** 30)).toBe(6.4 * 2 ** 30);
    expect(triggerFor(Number.NaN)).toBe(Infinity);
  });

  test("memory is tight for exports' sorts past 60% of the process's budget, below the trigger; never with a cap it cannot read", () => {
    expect(tightFor(512e6)).toBe(614.4e6);
    expect(tightFor(4 * 2 ** 30)).toBe(4.8 * 2 ** 30);
    expect(tightFor(512e6)).toBeLessThan(triggerFor(512e6));
    expect(tightFor(Number.NaN)).toBe(Infinity);
  });

  test("the guard of this process says memory is tight once a look finds it past 60% of its budget (a cap it cannot read: never)", () => {
    const rss = process.memoryUsage().rss;
    // A cap whose budget's 60% is under what this process holds now, and one whose budget is far above it.
    const small = startMemoryGuard(rss / 2, createAppMetrics());
    const large = startMemoryGuard(rss * 100, createAppMetrics());
    const unread = startMemoryGuard(Number.NaN, createAppMetrics());
    try {
      expect([small, large, unread].map(({ guard }) => guard.tight())).toEqual([false, false, false]); // no look yet
      for (const { guard } of [small, large, unread]) guard.check();
      expect([small, large, unread].map(({ guard }) => guard.tight())).toEqual([true, false, false]);
    } finally {
      for (const { stop } of [small, large, unread]) stop();
    }
  });

  test('a cap it cannot read (NaN) leaves the heap to its own schedule', () => {
    const metrics = createAppMetrics();
    const { guard, stop } = startMemoryGuard(Number.NaN, metrics);
    try {
      Bun.gc(true);
      expect(guard.check()).toBe(false);
      makeGarbage(160);
      expect(guard.check()).toBe(false);
      expect(metrics.forcedCollections).toBe(0);
    } finally {
      stop();
    }
  });
});
