import { afterEach, describe, expect, test } from 'bun:test';
import { makeEvent, openHarness, type Harness } from './helpers';

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
