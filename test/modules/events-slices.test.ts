import { describe, expect, test } from 'bun:test';
import { createApp } from '../../src/app';
import { BASE, createTestApp } from '../helpers/test-app';
import { exportSliceRows, planSlices, type Slice } from '../../src/modules/events/export-plan';

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
      { from: 4 * H, to: 4 * H + 60_000, limit: null },
      { from: 1000, to: 4 * H, limit: null },
    ]);
    expectTiling(slices, window, 'DESC');
  });

  test('ascending: the empty hour between two slices belongs to one of them, the last reaches the top', () => {
    const window = { bottom: null, top: 6 * H };
    const slices = planSlices(buckets, window, 'ASC', null, 100);
    expect(slices).toEqual([
      { from: null, to: 2 * H, limit: null },
      { from: 2 * H, to: 6 * H, limit: null },
    ]);
    expectTiling(slices, window, 'ASC');
  });

  test('a limit: the bucket that reaches it alone, with the rows still needed, then the rest of the window', () => {
    const window = { bottom: null, top: 5 * H };
    const slices = planSlices(buckets, window, 'DESC', 150, 100);
    expect(slices).toEqual([
      { from: 4 * H, to: 5 * H, limit: null },
      { from: 2 * H, to: 4 * H, limit: null },
      { from: H, to: 2 * H, limit: 40 },
      { from: null, to: H, limit: 0 },
    ]);
    expectTiling(slices, window, 'DESC');
    expect(planSlices(buckets, window, 'DESC', 100, 100)).toEqual([
      { from: 4 * H, to: 5 * H, limit: 100 },
      { from: null, to: 4 * H, limit: 0 },
    ]);
    // The limit reached in the window's last bucket: nothing after it.
    expect(planSlices(buckets, { bottom: 0, top: 5 * H }, 'DESC', 220, 1000)).toEqual([
      { from: H, to: 5 * H, limit: null },
      { from: 0, to: H, limit: 40 },
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
      { from: (3 * H) / 4, to: H, limit: null },
      { from: H / 2, to: (3 * H) / 4, limit: null },
      { from: H / 4, to: H / 2, limit: null },
      { from: null, to: H / 4, limit: null },
    ]);
  });

  test('no rows, no slices', () => {
    expect(planSlices([], { bottom: null, top: 1 }, 'DESC', null)).toEqual([]);
  });
});

describe('exportSliceRows', () => {
  test('100,000 rows a slice after a first of 25,000; while memory is tight, every slice 25,000 (a smaller sort) when this process sorts them; a context\'s own sizes whatever the memory', () => {
    let tight = false;
    const memoryTight = () => tight;
    const sizes = () => [
      exportSliceRows({}),
      exportSliceRows({ memoryTight }),
      exportSliceRows({ memoryTight, exportSlices: { rows: 7, firstRows: 3 } }),
      // ClickHouse sorts on its server: nothing to spare here.
      exportSliceRows({ memoryTight, runner: { writesFiles: false } }),
    ];
    expect(sizes()).toEqual([
      { rows: 100_000, firstRows: 25_000 },
      { rows: 100_000, firstRows: 25_000 },
      { rows: 7, firstRows: 3 },
      { rows: 100_000, firstRows: 25_000 },
    ]);
    tight = true;
    expect(sizes()).toEqual([
      { rows: 100_000, firstRows: 25_000 },
      { rows: 25_000, firstRows: 25_000 },
      { rows: 7, firstRows: 3 },
      { rows: 100_000, firstRows: 25_000 },
    ]);
    // Planned with those sizes: 16 hours of 10,000 rows each.
    const counted = Array.from({ length: 16 }, (_, i) => hour(i, 10_000));
    const plan = (t: boolean) => {
      tight = t;
      const { rows, firstRows } = exportSliceRows({ memoryTight });
      return planSlices(counted, { bottom: 0, top: 16 * H }, 'ASC', null, rows, firstRows).map((slice) => counted.filter((b) => b.from >= (slice.from ?? 0) && b.to <= slice.to).length * 10_000);
    };
    expect([plan(false), plan(true)]).toEqual([
      [30_000, 50_000, 80_000],
      [30_000, 30_000, 30_000, 30_000, 30_000, 10_000],
    ]);
  });
});

describe('an export asks whether memory is tight when it is planned', () => {
  test('the app asks once an export, and a tight export gives the same csv as another', async () => {
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
        return { status: response.status, asked, text: await response.text() };
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
});
