import { afterEach, describe, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../../../src/storage/db';
import { SaturatedThreads, threadsLeft, WIDEN_AFTER_MS } from '../../../../src/storage/events/tiers/saturated-threads';
import { createEventStore } from '../../../../src/storage/events';
import { makeEvent, testClock, until } from '../helpers';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

const threadsOf = async (db: Database): Promise<number> => Number((await db.query<{ t: string }>("SELECT current_setting('threads') AS t"))[0]?.t);

describe('DuckDB threads while ingestion saturates the store', () => {
  test('narrowed once when saturated, back only after WIDEN_AFTER_MS below the rate; never with nothing to narrow to', async () => {
    const applied: Array<number | null> = [];
    const policy = new SaturatedThreads(async (t) => void applied.push(t), 1, silent);
    let now = 1_000_000;
    policy.note(false, now);
    expect(applied).toEqual([]);
    policy.note(true, now);
    policy.note(true, (now += 100));
    await policy.settled();
    expect(applied).toEqual([1]);
    // A dip shorter than the interval, then saturated again: nothing changes.
    policy.note(false, (now += 100));
    policy.note(false, (now += WIDEN_AFTER_MS - 200));
    policy.note(true, (now += 100));
    policy.note(false, (now += 100));
    policy.note(false, (now += WIDEN_AFTER_MS - 1));
    await policy.settled();
    expect(applied).toEqual([1]);
    policy.note(false, (now += 1));
    policy.note(false, (now += 100));
    await policy.settled();
    expect(applied).toEqual([1, null]);
    policy.note(true, (now += 100));
    await policy.release();
    expect(applied).toEqual([1, null, 1, null]);

    const never: Array<number | null> = [];
    const off = new SaturatedThreads(async (t) => void never.push(t), null, silent);
    off.note(true, now);
    await off.release();
    expect(never).toEqual([]);
  });

  test('changes apply one after the other, so the last asked for holds; a failed change is logged, not thrown', async () => {
    const order: Array<number | null> = [];
    const warnings: string[] = [];
    let calls = 0;
    const slowFirst = async (t: number | null) => {
      if (calls++ === 0) await Bun.sleep(30);
      order.push(t);
      if (t === 3) throw new Error('refused');
    };
    const policy = new SaturatedThreads(slowFirst, 3, { ...silent, warn: (msg: string) => void warnings.push(msg) });
    policy.note(true, 0);
    policy.note(false, 1);
    policy.note(false, 1 + WIDEN_AFTER_MS);
    await policy.settled();
    expect(order).toEqual([3, null]);
    expect(warnings).toEqual(['could not change DuckDB threads']);
  });

  test('the count left to DuckDB: the cores minus the busy threads, at least one', () => {
    expect([threadsLeft(2, 2), threadsLeft(2, 1), threadsLeft(8, 2), threadsLeft(1, 2), threadsLeft(16, 3)]).toEqual([1, 1, 6, 1, 13]);
  });

  describe('on DuckDB', () => {
    let dir = '';
    let db: Database | null = null;
    afterEach(async () => {
      await db?.close();
      db = null;
      if (dir) await rm(dir, { recursive: true, force: true });
      dir = '';
    });

    test('setThreads sets the whole database, never above the count it was opened with; null restores that count', async () => {
      dir = await mkdtemp(join(tmpdir(), 'threads-'));
      db = await openDatabase(join(dir, 'db.duckdb'), { threads: 3, readers: 2 });
      expect(await threadsOf(db)).toBe(3);
      await db.setThreads(1);
      expect(await threadsOf(db)).toBe(1);
      await db.setThreads(64);
      expect(await threadsOf(db)).toBe(3);
      await db.setThreads(2);
      await db.setThreads(null);
      expect(await threadsOf(db)).toBe(3);
    });

    test('a store taking appends at the saturation rate narrows DuckDB, and gives the threads back once the rate has stayed low', async () => {
      const clock = testClock();
      dir = await mkdtemp(join(tmpdir(), 'threads-'));
      // DuckDB opened with 3 threads whatever this machine has; 4 cores, 3 busy threads: 1 left.
      db = await openDatabase(join(dir, 'db.duckdb'), { threads: 3 });
      const store = await createEventStore(db, { dataDir: dir, now: clock.now, cores: 4, busyThreads: 3, bufferMaxAgeMs: 60_000, autoCompact: false });
      try {
        let n = 0;
        // Appends at well over the saturation rate (100 in a 100 ms window) until the tick narrows.
        await until(async () => {
          await Promise.all(Array.from({ length: 150 }, () => store.append([makeEvent(n++)])));
          return (await threadsOf(db!)) === 1;
        });
        // No appends now. The store's clock is moved on at every poll, and the count must come back
        // within half the interval of real time: only a store that measures the quiet spell on its
        // own clock can (on the real clock it would take WIDEN_AFTER_MS).
        await until(async () => {
          clock.advance(WIDEN_AFTER_MS);
          return (await threadsOf(db!)) === 3;
        }, WIDEN_AFTER_MS / 2);
      } finally {
        await store.close();
      }
    });
  });
});
