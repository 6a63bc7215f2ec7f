import { afterEach, describe, expect, test } from 'bun:test';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { listDeadLetters, replayDeadLetters } from '../../../../src/storage/events';
import { makeEvent, openHarness, testClock, uuidsOf, type Harness } from '../helpers';

let h: Harness | null = null;
afterEach(async () => {
  await h?.cleanup();
  h = null;
});

describe('dead letters', () => {
  test('rows DuckDB rejects are dead-lettered with their reason; the rest of the segment is stored', async () => {
    h = await openHarness();
    const bad = makeEvent(7, { properties: '{"broken": ' });
    await h.store.append([makeEvent(1), makeEvent(2), bad, makeEvent(3)]);
    expect((await uuidsOf(h)).length).toBe(3);
    const letters = await listDeadLetters(h.dir);
    expect(letters.length).toBe(1);
    expect(letters[0]).toMatchObject({ source: 'rows', rows: 1 });
    expect(letters[0].reason).toContain('rejected 1 row');
    expect(letters[0].errors?.[0].message).toContain('not valid JSON');
    expect(letters[0].errors?.[0].line).toContain(bad.uuid);
    expect(h.store.stats().deadLetters).toBe(1);
    // Replaying a row that is still bad puts it back in the dead letters, never drops it.
    const result = await h.store.replayDeadLetters();
    expect(result.rows).toBe(1);
    const again = await listDeadLetters(h.dir);
    expect(again.length).toBe(1);
    expect(again[0].id).not.toBe(letters[0].id);
    expect((await uuidsOf(h)).length).toBe(3);
  });

  test('a store closed while its loads fail tries once and leaves them in the log, not in the dead letters; the next start loads them', async () => {
    let tries = 0;
    const clock = testClock();
    const settings = { now: clock.now, maxFlushAttempts: 3, flushRetryMs: 5 };
    h = await openHarness({ ...settings, hooks: { beforeLoad() { tries++; throw new Error('disk I/O error'); } } });
    await h.store.append(Array.from({ length: 50 }, (_, n) => makeEvent(n)));
    // Nothing ages on the manual clock: the close seals the segment, and its load is the only one
    // (the batch, then its first segment alone), with no retries after it.
    await h.store.close();
    expect(tries).toBe(2);
    expect(await listDeadLetters(h.dir)).toEqual([]);
    await h.reopen({ ...settings, hooks: {} });
    expect(await uuidsOf(h)).toEqual(Array.from({ length: 50 }, (_, n) => makeEvent(n).uuid).sort());
    expect(await listDeadLetters(h.dir)).toEqual([]);
    expect(h.store.stats().deadLetters).toBe(0);
  });

  test('a segment that keeps failing is moved aside whole, listed, and replayed by the operator', async () => {
    let broken = true;
    h = await openHarness({
      maxFlushAttempts: 2,
      flushRetryMs: 5,
      hooks: {
        beforeLoad() {
          if (broken) throw new Error('disk I/O error');
        },
      },
    });
    await h.store.append(Array.from({ length: 50 }, (_, n) => makeEvent(n)));
    await h.store.flush();
    expect((await uuidsOf(h)).length).toBe(0);
    const letters = await listDeadLetters(h.dir);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ source: 'segment', rows: 50 });
    expect(letters[0].reason).toContain('disk I/O error');
    expect((await readdir(join(h.dir, 'events', 'wal'))).filter((f) => f.endsWith('.wal'))).toEqual([]);
    // Later appends are not blocked by the dead segment.
    broken = false;
    await h.store.append([makeEvent(100)]);
    expect((await uuidsOf(h)).length).toBe(1);

    // The operator CLI replays it after a restart (new segment ids never collide with it).
    await h.reopen({ hooks: {} });
    const result = await replayDeadLetters(h.store, [letters[0].id]);
    expect(result).toEqual({ replayed: [letters[0].id], rows: 50 });
    expect(await listDeadLetters(h.dir)).toEqual([]);
    expect((await uuidsOf(h)).length).toBe(51);
    // Replaying twice (e.g. a crash before the entry was removed) adds nothing.
    await h.store.append(Array.from({ length: 50 }, (_, n) => makeEvent(n)));
    expect((await uuidsOf(h)).length).toBe(51);
  });

  test('a load that finds DuckDB at its memory cap is retried after a checkpoint, never salvaged or dead-lettered for it', async () => {
    const OOM = 'Out of Memory Error: could not allocate block of size 30.5 MiB (481.1 MiB/488.2 MiB used)';
    let failures = 6; // more than maxFlushAttempts: a bad segment would be in the dead letters by then
    const loads: number[] = [];
    h = await openHarness({
      maxFlushAttempts: 2,
      flushRetryMs: 5,
      hooks: {
        beforeLoad(segments) {
          loads.push(segments.length);
          if (failures-- > 0) throw new Error(OOM);
        },
      },
    });
    const hh = h;
    // Three segments waiting together: the first load takes them all.
    await Promise.all([0, 1, 2].map((k) => hh.store.append(Array.from({ length: 20 }, (_, n) => makeEvent(k * 20 + n)))));
    await h.store.flush();
    expect((await uuidsOf(h)).length).toBe(60);
    expect(await listDeadLetters(h.dir)).toEqual([]);
    expect(h.store.stats()).toMatchObject({ deadLetters: 0, flushFailures: 6 });
    expect(h.store.stats().checkpoints).toBeGreaterThanOrEqual(6);
    // After the first failure, one segment at a time until one went in.
    expect(loads.slice(1, 7).every((n) => n === 1)).toBe(true);
  });

  test('a segment that runs out of memory even alone is dead-lettered only after four times maxFlushAttempts', async () => {
    let tries = 0;
    h = await openHarness({ maxFlushAttempts: 2, flushRetryMs: 1, hooks: { beforeLoad() { tries++; throw new Error('Out of Memory Error: failed to pin block of size 256.0 KiB'); } } });
    await h.store.append(Array.from({ length: 10 }, (_, n) => makeEvent(n)));
    await h.store.flush();
    expect(tries).toBe(8);
    const letters = await listDeadLetters(h.dir);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ source: 'segment', rows: 10 });
    expect(letters[0].reason).toContain('Out of Memory Error');
  });

  test('rows replayed from the dead letters (never in the recent-uuid filter) are read by the dedupe check of later loads', async () => {
    let broken = true;
    const hooks = {
      beforeLoad() {
        if (broken) throw new Error('disk I/O error');
      },
    };
    h = await openHarness({ maxFlushAttempts: 1, flushRetryMs: 5, directMinRows: 1, dedupeWindowMs: 300, hooks });
    await h.store.append(Array.from({ length: 20 }, (_, n) => makeEvent(n)));
    await h.store.flush();
    const [letter] = await listDeadLetters(h.dir);
    broken = false;
    // A restart empties the filter; the replayed rows reach the files unseen by it.
    await h.reopen({ maxFlushAttempts: 1, flushRetryMs: 5, directMinRows: 1, dedupeWindowMs: 300, hooks: {} });
    await replayDeadLetters(h.store, [letter.id]);
    expect((await uuidsOf(h)).length).toBe(20);
    // A client retry of replayed rows looks new to the filter, but the replayed file is read.
    await h.store.append([makeEvent(3), makeEvent(4), makeEvent(500)]);
    expect(await uuidsOf(h)).toEqual([...Array.from({ length: 20 }, (_, n) => n), 500].map((n) => makeEvent(n).uuid));
    expect(h.store.stats()).toMatchObject({ freshLoads: 1, priorFilesRead: 1, duplicateRowsSkipped: 2 });
  });

  test('a torn log tail after a crash is cut into the dead letters, the whole frames kept', async () => {
    const { appendFile } = await import('node:fs/promises');
    h = await openHarness({ bufferMaxAgeMs: 60_000, hooks: { beforeLoad: () => new Promise(() => undefined) } });
    await h.store.append(Array.from({ length: 20 }, (_, n) => makeEvent(n)));
    const [seg] = (await readdir(join(h.dir, 'events', 'wal'))).filter((f) => f.endsWith('.wal'));
    await appendFile(join(h.dir, 'events', 'wal', seg), '\x1dW1 999 abc 3\npartial row that was never acknow');
    h.store = { close: async () => undefined } as typeof h.store; // "crash": no close
    await h.reopen({ hooks: {} });
    expect((await uuidsOf(h)).length).toBe(20);
    const letters = await listDeadLetters(h.dir);
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({ source: 'damaged-wal' });
  });
});
