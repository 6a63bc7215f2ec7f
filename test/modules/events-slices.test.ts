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

test('exportSliceRows: 100,000 rows a slice after a first of 25,000, or the context\'s own sizes', () => {
  expect(exportSliceRows({})).toEqual({ rows: 100_000, firstRows: 25_000 });
  expect(exportSliceRows({ exportSlices: { rows: 7, firstRows: 3 } })).toEqual({ rows: 7, firstRows: 3 });
  expect(exportSliceRows({ exportSlices: { rows: 7 } })).toEqual({ rows: 7, firstRows: 7 });
});

describe('an export asks whether memory is tight as it reads its slices', () => {
  test('a large slice is cut into first-size slices when memory is tight as it is about to be read and it would be sorted; the same csv and json either way, in either order', async () => {
    const t = await createTestApp();
    try {
      // 60 events an hour apart, planned in slices of 5, 10, 20, 20 and 5 rows (first 5, doubling
      // up to 20) in either order; 55 more of another name, read with no lower bound, newest
      // first: 5, 10, 20 and 20, the last (the oldest) unbounded below.
      const base = Date.UTC(2026, 0, 1);
      const events = (name: string, n: number) =>
        Array.from({ length: n }, (_, i) => ({ event: name, distinct_id: `d-${i % 7}`, properties: { i }, timestamp: new Date(base + i * 3_600_000 + (name === 'sliced' ? 0 : 1_000)).toISOString() }));
      const batch = [...events('sliced', 60), ...events('unbounded', 55)];
      expect((await t.json('POST', '/batch/', { body: { api_key: t.account.project.apiToken, batch }, key: null })).status).toBe(200);
      await t.deps.storage.events.flush();
      const store = t.deps.storage.events;
      const original = store.streamQuery.bind(store);
      /** `tight` is asked with the number of slice statements run so far. */
      const exported = async (format: 'csv' | 'json', query: string, tight: (statements: number) => boolean) => {
        let asked = 0;
        let statements = 0;
        let explains = 0;
        store.streamQuery = (sql, params, options) => {
          if (format === 'csv' ? sql.startsWith('COPY') : sql.startsWith('SELECT uuid, event, distinct_id')) statements++;
          if (sql.startsWith('EXPLAIN')) explains++;
          return original(sql, params, options);
        };
        try {
          const app = createApp({ ...t.deps, exportSlices: { rows: 20, firstRows: 5 }, memoryTight: () => (asked++, tight(statements)) });
          const response = await app.handle(
            new Request(`${BASE}/api/projects/${t.account.project.id}/events/?format=${format}&${query}`, { headers: { authorization: `Bearer ${t.account.personalApiKey.value}` } }),
          );
          return { status: response.status, text: await response.text(), asked, statements, explains };
        } finally {
          store.streamQuery = original;
        }
      };
      const cases: Array<{ query: string; rows: number; statements: number[]; asked: number; explains?: number }> = [
        // Asked for the slices of more than 1.5 times the first's rows (10, 20, 20). Plentiful: the
        // planned slices; tight: 5, 5 + 5, 4 x 5, 4 x 5, 5; turning tight after the second slice
        // is read (an export planned before memory was tight): 5, 10, 4 x 5, 4 x 5, 5.
        { query: 'event=sliced&after=2025-12-31T00:00:00Z', rows: 60, statements: [5, 12, 11], asked: 3 },
        { query: `event=sliced&after=2025-12-31T00:00:00Z&orderBy=${encodeURIComponent('["timestamp"]')}`, rows: 60, statements: [5, 12, 11], asked: 3 },
        { query: 'event=unbounded', rows: 55, statements: [4, 11, 10], asked: 3 },
      ];
      const run = async (c: (typeof cases)[number]) => {
        for (const format of ['csv', 'json'] as const) {
          const loose = await exported(format, c.query, () => false);
          const tight = await exported(format, c.query, () => true);
          const tightening = await exported(format, c.query, (statements) => statements >= 2);
          expect({ query: c.query, format, runs: [loose, tight, tightening].map((e) => [e.status, e.statements, e.asked, c.explains === undefined ? null : e.explains]) }).toEqual({
            query: c.query, format, runs: c.statements.map((n) => [200, n, c.asked, c.explains ?? null]),
          });
          expect(tight.text).toBe(loose.text);
          expect(tightening.text).toBe(loose.text);
        }
        const [, ...records] = (await exported('csv', c.query, () => false)).text.trim().split('\r\n');
        expect(records).toHaveLength(c.rows);
      };
      for (const c of cases) await run(c);
      // From time-ordered Parquet files, newest first: each slice is a scan, which sorts nothing,
      // so none is cut however tight memory is; oldest first still sorts, and cuts.
      await t.deps.storage.events.compact();
      // Whether each large slice is read from a scan is asked of storage once (one EXPLAIN a slice),
      // not again by its reader.
      await run({ ...cases[0]!, statements: [5, 5, 5], explains: 5 });
      await run(cases[1]!);
      await run({ ...cases[2]!, statements: [4, 4, 4], explains: 4 });
    } finally {
      await t.close();
    }
  });
});
