import { describe, expect, test } from 'bun:test';
import { createApp } from '../../src/app';
import { BASE, createTestApp } from '../helpers/test-app';
import { exportSliceRows, exportUnits, planSlices, type Slice } from '../../src/modules/events/export-plan';

const H = 3_600_000;
const hour = (start: number, n: number) => ({ from: start * H, to: (start + 1) * H, n });
const buckets = [hour(0, 40), hour(1, 70), hour(3, 10), hour(4, 100)];

/** The slices tile [bottom, top): each starts where the one before it ends (in either order), none empty. */
function expectTiling(slices: readonly Slice[], window: { bottom: number | null; top: number }, order: 'ASC' | 'DESC') {
  const up = order === 'DESC' ? [...slices].reverse() : [...slices];
  expect(up[0]?.from).toBe(window.bottom);
  expect(up[up.length - 1]?.to).toBe(window.top);
  for (let i = 1; i < up.length; i++) expect(up[i]?.from).toBe(up[i - 1]!.to);
  for (const s of up) expect(s.from === null || s.from < s.to).toBe(true);
}

describe('planSlices (export slices from counted buckets)', () => {
  test('newest first, about `target` rows a slice, tiling the window', () => {
    const window = { bottom: 1000, top: 4 * H + 60_000 };
    const slices = planSlices(buckets, window, 'DESC', null, 100);
    expect(slices).toEqual([
      { from: 4 * H, to: 4 * H + 60_000, rows: 100, limit: null },
      { from: 1000, to: 4 * H, rows: 120, limit: null },
    ]);
    expectTiling(slices, window, 'DESC');
  });

  test('ascending: the empty hour between two slices belongs to one of them, the last reaches the top', () => {
    const window = { bottom: null, top: 6 * H };
    const slices = planSlices(buckets, window, 'ASC', null, 100);
    expect(slices).toEqual([
      { from: null, to: 2 * H, rows: 110, limit: null },
      { from: 2 * H, to: 6 * H, rows: 110, limit: null },
    ]);
    expectTiling(slices, window, 'ASC');
  });

  test('a limit: the bucket that reaches it alone, with the rows still needed, then the rest of the window', () => {
    const window = { bottom: null, top: 5 * H };
    const slices = planSlices(buckets, window, 'DESC', 150, 100);
    expect(slices).toEqual([
      { from: 4 * H, to: 5 * H, rows: 100, limit: null },
      { from: 2 * H, to: 4 * H, rows: 10, limit: null },
      { from: H, to: 2 * H, rows: 70, limit: 40 },
      { from: null, to: H, rows: 0, limit: 0 },
    ]);
    expectTiling(slices, window, 'DESC');
    expect(planSlices(buckets, window, 'DESC', 100, 100)).toEqual([
      { from: 4 * H, to: 5 * H, rows: 100, limit: 100 },
      { from: null, to: 4 * H, rows: 0, limit: 0 },
    ]);
    // The limit reached in the window's last bucket: nothing after it.
    expect(planSlices(buckets, { bottom: 0, top: 5 * H }, 'DESC', 220, 1000)).toEqual([
      { from: H, to: 5 * H, rows: 180, limit: null },
      { from: 0, to: H, rows: 40, limit: 40 },
    ]);
  });

  test('the first slices are smaller, doubling up to the target', () => {
    const hours = Array.from({ length: 12 }, (_, i) => hour(i, 10));
    const window = { bottom: 0, top: 12 * H };
    const slices = planSlices(hours, window, 'DESC', null, 40, 10);
    expect(slices.map((s) => (s.to - (s.from ?? 0)) / H)).toEqual([1, 2, 4, 4, 1]);
    expectTiling(slices, window, 'DESC');
  });

  test('buckets narrower than an hour (a busy hour recounted) make narrower slices', () => {
    const quarters = [0, 1, 2, 3].map((q) => ({ from: (q * H) / 4, to: ((q + 1) * H) / 4, n: 100 }));
    const window = { bottom: null, top: H };
    const slices = planSlices(quarters, window, 'DESC', null, 100);
    expect(slices).toEqual([
      { from: (3 * H) / 4, to: H, rows: 100, limit: null },
      { from: H / 2, to: (3 * H) / 4, rows: 100, limit: null },
      { from: H / 4, to: H / 2, rows: 100, limit: null },
      { from: null, to: H / 4, rows: 100, limit: null },
    ]);
  });

  test('no rows, no slices', () => {
    expect(planSlices([], { bottom: null, top: 1 }, 'DESC', null)).toEqual([]);
  });
});

describe('exportUnits (the planned slices joined as they are read)', () => {
  // 16 hours of 10,000 rows, planned as an export that sorts here plans them: at the first slice's size.
  const counted = Array.from({ length: 16 }, (_, i) => hour(i, 10_000));
  const window = { bottom: 0, top: 16 * H };
  const { firstRows } = exportSliceRows({});
  const planned = planSlices(counted, window, 'ASC', null, firstRows, firstRows);
  /** The units' rows, memory tight as `tight` says for each unit in turn (and after: its last). */
  const units = (tight: boolean[], writesFiles = true, slices = planned, order: 'ASC' | 'DESC' = 'ASC') => {
    let asked = 0;
    const memoryTight = () => tight[Math.min(asked++, tight.length - 1)] as boolean;
    const out = [...exportUnits({ memoryTight, runner: { writesFiles } }, slices, order)];
    expectTiling(out, window, order);
    return out;
  };
  const rowsOf = (slices: readonly Slice[]) => slices.map((s) => s.rows);

  test('joined up to the first slice\'s rows, then twice that, up to 100,000; one planned slice at a time while memory is tight, decided as each is read', () => {
    expect(exportSliceRows({})).toEqual({ rows: 100_000, firstRows: 25_000, sortsHere: true });
    expect(rowsOf(planned)).toEqual([30_000, 30_000, 30_000, 30_000, 30_000, 10_000]);
    expect(rowsOf(units([false]))).toEqual([30_000, 60_000, 70_000]);
    expect(rowsOf(units([true]))).toEqual([30_000, 30_000, 30_000, 30_000, 30_000, 10_000]);
    // Tight from the second slice on (planned while it was not), then plentiful again.
    expect(rowsOf(units([false, true, true, false]))).toEqual([30_000, 30_000, 30_000, 70_000]);
    // ClickHouse sorts on its server: nothing to spare here.
    expect(rowsOf(units([true], false))).toEqual([30_000, 60_000, 70_000]);
    // A context's own sizes (tests make them small).
    expect(exportSliceRows({ exportSlices: { rows: 7, firstRows: 3 } })).toEqual({ rows: 7, firstRows: 3, sortsHere: true });
  });

  test('a slice a limit cuts, and the rest of the window after it, are read alone', () => {
    const limited = planSlices(counted, window, 'DESC', 95_000, firstRows, firstRows);
    expect(limited.map((s) => [s.rows, s.limit])).toEqual([[30_000, null], [30_000, null], [30_000, null], [10_000, 5_000], [0, 0]]);
    expect(units([false], true, limited, 'DESC').map((s) => [s.rows, s.limit])).toEqual([[30_000, null], [60_000, null], [10_000, 5_000], [0, 0]]);
  });
});

describe('an export asks whether memory is tight as it reads its slices', () => {
  test('the app asks once for a one-slice export, and a tight export gives the same csv as another', async () => {
    const t = await createTestApp();
    try {
      const batch = Array.from({ length: 30 }, (_, i) => ({ event: 'tight', distinct_id: `d-${i}`, properties: { i }, timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() }));
      expect((await t.json('POST', '/batch/', { body: { api_key: t.account.project.apiToken, batch }, key: null })).status).toBe(200);
      await t.deps.storage.events.flush();
      const exported = async (tight: boolean) => {
        let asked = 0;
        const app = createApp({ ...t.deps, memoryTight: () => (asked++, tight) });
        const response = await app.handle(
          new Request(`${BASE}/api/projects/${t.account.project.id}/events/?event=tight&format=csv&after=2025-12-31T00:00:00Z`, { headers: { authorization: `Bearer ${t.account.personalApiKey.value}` } }),
        );
        const text = await response.text(); // slices are decided as they are read
        return { status: response.status, asked, text };
      };
      const loose = await exported(false);
      const tight = await exported(true);
      expect([loose.status, loose.asked, tight.status, tight.asked]).toEqual([200, 1, 200, 1]);
      expect(tight.text).toBe(loose.text);
      expect(loose.text.trim().split('\r\n')).toHaveLength(31);
    } finally {
      await t.close();
    }
  });

  test('planned at the first slice\'s size; joined while memory is plentiful, read alone while it is tight, decided slice by slice; the same csv and json either way', async () => {
    const t = await createTestApp();
    try {
      // 60 events an hour apart: planned in slices of 5 rows (`firstRows`), 12 of them.
      const base = Date.UTC(2026, 0, 1);
      const batch = Array.from({ length: 60 }, (_, i) => ({ event: 'sliced', distinct_id: `d-${i % 7}`, properties: { i }, timestamp: new Date(base + i * 3_600_000).toISOString() }));
      expect((await t.json('POST', '/batch/', { body: { api_key: t.account.project.apiToken, batch }, key: null })).status).toBe(200);
      await t.deps.storage.events.flush();
      const store = t.deps.storage.events;
      const original = store.streamQuery.bind(store);
      const exported = async (format: 'csv' | 'json', tight: (asked: number) => boolean) => {
        let asked = 0;
        let copies = 0;
        let reads = 0;
        store.streamQuery = (sql, params, options) => {
          if (sql.startsWith('COPY')) copies++;
          if (sql.startsWith('SELECT uuid, event, distinct_id')) reads++;
          return original(sql, params, options);
        };
        try {
          const app = createApp({ ...t.deps, exportSlices: { rows: 20, firstRows: 5 }, memoryTight: () => tight(asked++) });
          const response = await app.handle(
            new Request(`${BASE}/api/projects/${t.account.project.id}/events/?event=sliced&format=${format}&after=2025-12-31T00:00:00Z`, { headers: { authorization: `Bearer ${t.account.personalApiKey.value}` } }),
          );
          return { status: response.status, text: await response.text(), asked, statements: format === 'csv' ? copies : reads };
        } finally {
          store.streamQuery = original;
        }
      };
      for (const format of ['csv', 'json'] as const) {
        const loose = await exported(format, () => false);
        const tight = await exported(format, () => true);
        // Plentiful for the first two slices read, tight for the rest.
        const tightening = await exported(format, (asked) => asked >= 2);
        // Loose: 5, then 10, then 20, 20 and the last 5 rows; tight: the 12 planned slices; tightening: 5 and 10 rows, then 9 of 5.
        expect([loose, tight, tightening].map((e) => [e.status, e.statements, e.asked])).toEqual([[200, 5, 5], [200, 12, 12], [200, 11, 11]]);
        expect(tight.text).toBe(loose.text);
        expect(tightening.text).toBe(loose.text);
      }
      const [, ...records] = (await exported('csv', () => false)).text.trim().split('\r\n');
      expect(records).toHaveLength(60);
    } finally {
      await t.close();
    }
  });
});
