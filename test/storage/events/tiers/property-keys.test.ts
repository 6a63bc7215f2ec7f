import { afterEach, describe, expect, test } from 'bun:test';
import { makeEvent, openHarness, testClock, type Harness } from '../helpers';

let h: Harness | null = null;
afterEach(async () => {
  await h?.cleanup();
  h = null;
});

const DAY = 86_400_000;

/** Each registered file's keys as a scan of its rows gives them, and as the relation reports them. */
async function keysOf(hh: Harness) {
  const rel = await hh.store.eventsRelation(1);
  const out: Array<{ scanned: string[]; reported: readonly string[] | undefined }> = [];
  for (const f of rel.files) {
    const rows = await hh.db.query<{ k: string }>(`SELECT DISTINCT unnest(json_keys(properties)) AS k FROM read_parquet('${f.id}') ORDER BY k`);
    out.push({ scanned: rows.map((r) => r.k), reported: f.propertyKeys });
  }
  return out;
}

const withKey = (n: number, key: string, day = 0) =>
  makeEvent(n, { timestamp: Date.UTC(2024, 0, 1) + day * DAY + n * 1000, properties: JSON.stringify({ n, [key]: true, 'quote"d,key': 1 }) });

describe('property keys per Parquet file (sidecar)', () => {
  test('compaction lists every file\'s keys, exactly as a scan of its rows gives them, and they survive a reopen', async () => {
    h = await openHarness();
    await h.store.append([...Array.from({ length: 30 }, (_, n) => withKey(n, 'a', n % 3)), withKey(99, 'only_here', 1)]);
    await h.store.compact();
    const files = await keysOf(h);
    expect(files.length).toBe(3);
    for (const f of files) expect(f.reported).toEqual(f.scanned);
    expect(files.some((f) => f.scanned.includes('only_here'))).toBe(true);
    await h.reopen();
    for (const f of await keysOf(h)) expect(f.reported).toEqual(f.scanned);
  });

  test('merged files get the union of their inputs\' keys; entries of merged-away files are removed', async () => {
    h = await openHarness({ directMinRows: 1 });
    for (const [i, key] of ['a', 'b', 'c'].entries()) {
      await h.store.append(Array.from({ length: 10 }, (_, n) => withKey(i * 10 + n, key)));
      await h.store.flush();
      if (i === 1) await h.store.compact(); // a and b merged and listed before c arrives
    }
    await h.store.compact();
    const files = await keysOf(h);
    expect(files.length).toBe(1);
    expect(files[0]!.reported).toEqual(['a', 'b', 'c', 'n', 'quote"d,key']);
    expect(files[0]!.reported).toEqual(files[0]!.scanned);
    expect((await h.db.query<{ n: number }>('SELECT count(*)::INTEGER AS n FROM event_file_property_keys'))[0]!.n).toBe(1);
  });

  test('the background listing waits while logged segments wait to be loaded, then lists the files', async () => {
    let releaseA!: () => void;
    let releaseB!: () => void;
    const gateA = new Promise<void>((r) => (releaseA = r));
    const gateB = new Promise<void>((r) => (releaseB = r));
    let loads = 0;
    const clock = testClock();
    h = await openHarness({ directMinRows: 1, bufferMaxRows: 10, now: clock.now, hooks: { beforeLoad: () => (++loads === 1 ? gateA : gateB) } });
    const hh = h;
    const count = async (table: string) => (await hh.db.query<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM ${table}`))[0]!.n;
    try {
      await hh.store.append(Array.from({ length: 10 }, (_, n) => withKey(n, 'a'))); // segment A, sealed: its load waits at gate A
      await hh.store.append(Array.from({ length: 10 }, (_, n) => withKey(100 + n, 'b'))); // segment B, queued behind it
      releaseA();
      for (let i = 0; i < 100 && (await count('event_parquet_files')) === 0; i++) await Bun.sleep(20);
      expect(await count('event_parquet_files')).toBe(1);
      // A's file is registered while B waits at gate B: well past the listing's 1 s spacing (a few
      // ticks of the maintenance timer later), it is not listed.
      clock.advance(1_500);
      await Bun.sleep(300);
      expect(await count('event_file_property_keys')).toBe(0);
    } finally {
      releaseA();
      releaseB();
    }
    await hh.store.flush();
    // The listing is spaced by the store's clock: it moves on while waiting, so a file the first
    // listing after the loads missed (a busy machine's timing) is listed by the next.
    for (let i = 0; i < 50 && (await count('event_file_property_keys')) < 2; i++) {
      clock.advance(1_100);
      await Bun.sleep(100);
    }
    const files = await keysOf(hh);
    expect(files.length).toBe(2);
    for (const f of files) expect(f.reported).toEqual(f.scanned);
  });

  test('a lost or stale sidecar is never used: missing entries are listed again, unknown ones dropped at start', async () => {
    h = await openHarness();
    await h.store.append(Array.from({ length: 20 }, (_, n) => withKey(n, 'a', n % 2)));
    await h.store.compact();
    await h.db.run('DELETE FROM event_file_property_keys');
    await h.db.run(`INSERT INTO event_file_property_keys VALUES ('1/2024-01-01/gone-0.parquet', ['x'])`);
    await h.reopen();
    expect((await keysOf(h)).map((f) => f.reported)).toEqual([undefined, undefined]);
    expect((await h.db.query<{ n: number }>('SELECT count(*)::INTEGER AS n FROM event_file_property_keys'))[0]!.n).toBe(0);
    await h.store.compact();
    for (const f of await keysOf(h)) expect(f.reported).toEqual(f.scanned);
  });
});
