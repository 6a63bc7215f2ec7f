import { afterEach, describe, expect, test } from 'bun:test';
import { AppError } from '../../../src/errors';
import type { StoredEventRow } from '../../../src/core/events/columns';
import { makeEvent, openHarness, saturate, uuidsOf, type Harness } from './helpers';

let h: Harness | null = null;
afterEach(async () => {
  await h?.cleanup();
  h = null;
});

const batchOf = (start: number, n: number): StoredEventRow[] => Array.from({ length: n }, (_, i) => makeEvent(start + i));

describe('backpressure', () => {
  test('a stalled load makes append answer 503 with Retry-After, memory stays bounded, nothing acknowledged is lost', async () => {
    let release!: () => void;
    const stalled = new Promise<void>((r) => (release = r));
    const cap = 2 * 1024 * 1024;
    h = await openHarness({ maxPendingBytes: cap, bufferMaxRows: 500, hooks: { beforeLoad: () => stalled } });
    const acked: string[] = [];
    let rejected: unknown = null;
    const rssBefore = process.memoryUsage().rss;
    let n = 0;
    // Far more than the cap (each event ~300 bytes): must be refused well before the end.
    for (let i = 0; i < 200 && !rejected; i++) {
      const batch = batchOf(n, 100);
      n += 100;
      try {
        await h.store.append(batch);
        acked.push(...batch.map((r) => r.uuid));
      } catch (error) {
        rejected = error;
      }
    }
    expect(rejected).toBeInstanceOf(AppError);
    const err = rejected as AppError;
    expect(err.kind).toBe('unavailable');
    expect(err.status).toBe(503);
    expect(err.retryAfter).toBeGreaterThanOrEqual(1);
    const stats = h.store.stats();
    expect(stats.pendingBytes).toBeLessThanOrEqual(cap);
    expect(stats.rejectedAppends).toBeGreaterThan(0);
    // Bounded: the backlog lives in the log on disk, not in memory.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(64 * 1024 * 1024);
    // Concurrent appends are refused too, before any work is queued.
    const burst = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => h!.store.append(batchOf(100_000 + i * 100, 100))));
    expect(burst.every((r) => r.status === 'rejected')).toBe(true);

    release();
    await h.store.flush();
    const stored = await uuidsOf(h);
    expect(stored).toEqual([...acked].sort());
    await h.store.append(batchOf(n, 100)); // accepted again once drained
  });

  test('the store refuses a backlog past maxBacklogSeconds of loading long before maxPendingBytes, and stores everything it acknowledged', async () => {
    let release!: () => void;
    const stalled = new Promise<void>((r) => (release = r));
    // No load has been measured: the speed assumed at the start (50 MiB/s) for 0.05 s, ~2.5 MiB.
    const maxPendingBytes = 256 * 1024 * 1024;
    h = await openHarness({ maxPendingBytes, maxBacklogSeconds: 0.05, loadMaxBytes: 256 * 1024, bufferMaxRows: 500, hooks: { beforeLoad: () => stalled } });
    const acked: string[] = [];
    let rejected: AppError | null = null;
    for (let i = 0, n = 0; i < 400 && !rejected; i++, n += 100) {
      const batch = batchOf(n, 100);
      try {
        await h.store.append(batch);
        acked.push(...batch.map((r) => r.uuid));
      } catch (error) {
        rejected = error as AppError;
      }
    }
    expect(rejected?.status).toBe(503);
    expect(rejected?.detail).toBe('The event store is behind; retry later.');
    expect(rejected?.retryAfter).toBe(1);
    const { pendingBytes } = h.store.stats();
    expect(pendingBytes).toBeGreaterThan(2 * 1024 * 1024);
    expect(pendingBytes).toBeLessThanOrEqual(2.5 * 1024 * 1024 + 1);
    release();
    await h.store.flush();
    expect(await uuidsOf(h)).toEqual([...acked].sort());
  });

  test('a failed load keeps its rows and succeeds on a later attempt', async () => {
    let failures = 3;
    h = await openHarness({
      flushRetryMs: 10,
      maxFlushAttempts: 100,
      hooks: {
        beforeLoad() {
          if (failures-- > 0) throw new Error('simulated DuckDB failure');
        },
      },
    });
    await h.store.append(batchOf(0, 250));
    await h.store.flush();
    const stats = h.store.stats();
    expect(stats.flushFailures).toBeGreaterThanOrEqual(3);
    expect(stats.lastFlushError).toContain('simulated DuckDB failure');
    expect(stats.deadLetters).toBe(0);
    expect((await uuidsOf(h)).length).toBe(250);
  });

  test('a (nearly) full disk answers 503 with a long Retry-After', async () => {
    h = await openHarness({ minFreeDiskBytes: Number.MAX_SAFE_INTEGER });
    const error = await h.store.append(batchOf(0, 1)).catch((e) => e);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({ kind: 'unavailable', retryAfter: 30 });
  });

  test('after close, append refuses with 503 instead of accepting rows it cannot store', async () => {
    h = await openHarness();
    await h.store.close();
    const error = await h.store.append(batchOf(0, 1)).catch((e) => e);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).kind).toBe('unavailable');
  });

  /** Rows loaded into DuckDB so far (hot table and Parquet). */
  const loaded = (hh: Harness) => hh.store.stats().hotRows + hh.store.stats().parquetRows;

  /** Saturation by one-row appends; progress = rows loaded (read after a few rounds, once sealing has begun). */
  const saturateAppends = (hh: Harness, ms: number) => saturate(ms, (i) => hh.store.append([makeEvent(i)]), () => loaded(hh), { startRound: 3 });

  test('while appends saturate the store, sealed segments are loaded as they come: storing keeps pace, nothing waits for the load to ease', async () => {
    // Relaxed: each round of appends is acknowledged once written, so the rounds' pace (and the
    // saturation it makes) does not depend on how long a flush takes on a busy CI disk.
    h = await openHarness({ bufferMaxAgeMs: 20, durability: 'relaxed' });
    const load = await saturateAppends(h, 600);
    // Before, loads stood aside until 512 MiB of log were behind: nothing was loaded here.
    expect(load.atEnd).toBeGreaterThan(load.atStart);
    expect((await uuidsOf(h)).length).toBe(load.sent);
    expect(loaded(h)).toBe(load.sent);
  });
});
