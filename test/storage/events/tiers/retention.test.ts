import { afterEach, describe, expect, test } from 'bun:test';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { makeEvent, openHarness, uuidsOf, type Harness } from '../helpers';

let h: Harness | null = null;
afterEach(async () => {
  await h?.cleanup();
  h = null;
});

const DAY = 86_400_000;
/** makeEvent's events are of 2024-01-01; the clock is three weeks later. */
const NOW = Date.UTC(2024, 0, 22, 12);
const teamDir = (hh: Harness) => join(hh.dir, 'events', 'parquet', '1');

async function until(check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('retention did not apply');
    await Bun.sleep(20);
  }
}

describe('retention and the day directories', () => {
  test('an emptied day keeps its directory while the store runs (a load may be renaming into it); a restart removes it', async () => {
    const policy = new Map<number, number>();
    h = await openHarness({ retention: async () => policy, now: () => NOW });
    await h.store.append([makeEvent(1), makeEvent(2), makeEvent(3, { timestamp: NOW - DAY })]);
    await h.store.compact();
    expect((await readdir(teamDir(h))).sort()).toEqual(['2024-01-01', '2024-01-21']);

    policy.set(1, 7);
    h.store.retentionChanged();
    // No grace period here: the files go in the run that unregisters them.
    await until(async () => (await readdir(join(teamDir(h!), '2024-01-01'))).length === 0);
    expect(await uuidsOf(h)).toEqual([makeEvent(3).uuid]);
    expect((await readdir(teamDir(h))).sort()).toEqual(['2024-01-01', '2024-01-21']);

    // A late event of the dropped day is stored in that directory, until the next run drops it too.
    await h.store.append([makeEvent(4)]);
    await h.store.compact();
    expect((await readdir(join(teamDir(h), '2024-01-01'))).length).toBe(1);
    h.store.retentionChanged();
    await until(async () => (await readdir(join(teamDir(h!), '2024-01-01'))).length === 0);

    await h.reopen({ retention: async () => policy, now: () => NOW });
    expect(await readdir(teamDir(h))).toEqual(['2024-01-21']);
    expect(await uuidsOf(h)).toEqual([makeEvent(3).uuid]);
  });
});
