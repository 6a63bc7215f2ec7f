import { afterEach, describe, expect, test } from 'bun:test';
import { personCondition } from '../../../../src/storage/events/tiers/erasure';
import { makeEvent, openHarness, uuidsOf, type Harness } from '../helpers';

let h: Harness | null = null;
afterEach(async () => {
  await h?.cleanup();
  h = null;
});

const DAY = 86_400_000;
const PERSON_0 = '00000000-0000-4000-8000-000000000000';
const PERSON_1 = '00000000-0000-4000-8000-000000000001';
const day = (d: number, i: number) => Date.UTC(2024, 0, 1) + d * DAY + ((i * 7_919_000) % DAY);

/**
 * Team 1 over three days: p0, p1, p2 interleaved; on day 2 only p0 (a file that holds nothing
 * else). p0 also has rows under a distinct id of no one else's, found by its person id; team 2
 * has a p0 of its own.
 */
const rows = () => [
  ...Array.from({ length: 300 }, (_, i) => makeEvent(i, { distinctId: `p${i % 3}`, personId: i % 3 === 1 ? PERSON_1 : null, timestamp: day(i % 2, i) })),
  ...Array.from({ length: 20 }, (_, i) => makeEvent(1000 + i, { distinctId: 'p0', timestamp: day(2, i) })),
  ...Array.from({ length: 5 }, (_, i) => makeEvent(2000 + i, { distinctId: 'p0-device', personId: PERSON_0, timestamp: day(0, i) })),
  ...Array.from({ length: 10 }, (_, i) => makeEvent(3000 + i, { teamId: 2, distinctId: 'p0', timestamp: day(0, i) })),
];
const P0 = { distinctIds: ['p0'], personIds: [PERSON_0] };
const isP0 = (r: { distinctId: string; teamId: number }) => r.teamId === 1 && (r.distinctId === 'p0' || r.distinctId === 'p0-device');

async function fileOrder(hh: Harness, path: string) {
  return (await hh.db.query<{ t: Date; d: string }>(`SELECT timestamp AS t, distinct_id AS d FROM read_parquet('${path}')`)).map((r) => [r.d, r.t.getTime()] as const);
}

describe('personCondition', () => {
  test('bound values, never NULL', () => {
    expect(personCondition({ distinctIds: ['a', "b'"], personIds: ['u'] })).toEqual({
      sql: `(coalesce(list_contains(from_json(?::JSON, '["VARCHAR"]'), distinct_id), false) OR coalesce(list_contains(from_json(?::JSON, '["VARCHAR"]'), person_id), false))`,
      params: ['["a","b\'"]', '["u"]'],
    });
    expect(personCondition({ distinctIds: [], personIds: [] })).toEqual({ sql: 'false', params: [] });
  });

  // An IN list of five values or more, beside another condition, became a hash join whose rows
  // came out of order with more than one thread (duckdb/duckdb#24398): a file rewritten without a
  // person's rows, registered as sorted as its source was, held them out of time order.
  test("a file rewritten without a person's rows keeps its row order, however many distinct ids", async () => {
    h = await openHarness();
    await h.db.run('SET threads = 4');
    const dir = h.dir;
    await h.db.run(
      `COPY (SELECT uuid()::VARCHAR AS uuid, 'd' || (i % 40) AS distinct_id, NULL::VARCHAR AS person_id, '{"n":' || i || '}' AS properties, ` +
        `make_timestamp((1700000000000 + (40000 - i) * 10)::BIGINT * 1000) AS timestamp FROM range(40000) t(i)) TO '${dir}/in.parquet' (FORMAT parquet, ROW_GROUP_SIZE 4096)`,
    );
    const where = personCondition({ distinctIds: Array.from({ length: 12 }, (_, i) => `d${i}`), personIds: [PERSON_0] });
    for (let run = 0; run < 3; run++) {
      await h.db.run(`COPY (SELECT * FROM read_parquet('${dir}/in.parquet') WHERE NOT ${where.sql}) TO '${dir}/out.parquet' (FORMAT parquet, ROW_GROUP_SIZE 4096)`, where.params);
      const times = (await fileOrder(h, `${dir}/out.parquet`)).map(([, t]) => t);
      expect(times.length).toBe(28_000);
      expect(times).toEqual([...times].sort((a, b) => b - a));
    }
  });
});

describe('erasePersonEvents', () => {
  test('from Parquet files (rewritten in order, or dropped whole), person copies and hot rows; the rest stays, also after a reopen', async () => {
    h = await openHarness({ purgeGraceMs: 0 });
    const all = rows();
    await h.store.append(all);
    await h.store.compact();
    expect(await h.store.buildPersonCopies()).toBe(4);
    const late = [makeEvent(4000, { distinctId: 'p0', timestamp: day(1, 1) }), makeEvent(4001, { distinctId: 'p2', timestamp: day(1, 2) })];
    await h.store.append(late);
    await h.store.flush();
    const before = h.store.stats();
    expect(before.hotRows).toBe(2);
    const files = await h.db.query<{ path: string; rows: number; created: number; sorted: boolean }>(
      'SELECT path, rows, epoch_ms(created_at) AS created, sorted FROM event_parquet_files WHERE team_id = 1 ORDER BY day',
    );
    expect(files.map((f) => f.rows)).toEqual([155, 150, 20]);

    const erased = await h.store.erasePersonEvents(1, P0);
    expect(erased).toEqual({
      rows: 100 + 5 + 20 + 1,
      hotRows: 1,
      filesRewritten: 2,
      filesDropped: 1,
      bytesRewritten: before.parquetBytes - (await h.db.query<{ b: number }>('SELECT sum(bytes) AS b FROM event_parquet_files WHERE team_id = 2'))[0]!.b,
      copiesRewritten: 3,
      copyBytesRewritten: expect.any(Number),
    });
    const kept = [...all, ...late].filter((r) => !isP0(r));
    expect(await uuidsOf(h)).toEqual(kept.filter((r) => r.teamId === 1).map((r) => r.uuid).sort());
    expect(await uuidsOf(h, 2)).toEqual(all.filter((r) => r.teamId === 2).map((r) => r.uuid).sort());

    // The new files keep their predecessors' registration time and order; day 3 is gone.
    const now = await h.db.query<{ path: string; rows: number; created: number; sorted: boolean }>(
      'SELECT path, rows, epoch_ms(created_at) AS created, sorted FROM event_parquet_files WHERE team_id = 1 ORDER BY day',
    );
    expect(now.map((f) => [f.rows, f.created, f.sorted])).toEqual([
      [100, files[0]!.created, files[0]!.sorted],
      [100, files[1]!.created, files[1]!.sorted],
    ]);
    for (const f of now) {
      const order = await fileOrder(h, `${h.dir}/events/parquet/${f.path}`);
      expect(order.map(([, t]) => t)).toEqual(order.map(([, t]) => t).sort((a, b) => b - a));
    }
    // Copies still stand in for their (rewritten) sources, sorted by person, without p0.
    const copies = await h.db.query<{ path: string; sources: string[] }>('SELECT path, sources FROM event_person_files WHERE team_id = 1 ORDER BY day');
    expect(copies.map((c) => [...c.sources])).toEqual(now.map((f) => [f.path]));
    for (const c of copies) {
      const order = await fileOrder(h, `${h.dir}/events/by-person/${c.path}`);
      expect(order.some(([d]) => d === 'p0' || d === 'p0-device')).toBe(false);
      expect(order).toEqual([...order].sort(([da, ta], [db, tb]) => (da < db ? -1 : da > db ? 1 : tb - ta)));
    }
    const rel = await h.store.eventsRelation(1, {}, { byPerson: true });
    expect(rel.sql.match(/by-person/g)?.length).toBe(2);

    // Nothing of p0 on disk once the replaced files are deleted (grace 0: at the next tick of upkeep).
    // Read while no file is deleted: a purge between the glob and the open fails the read.
    const onDisk = () => h!.store.holdFiles(async () => (await h!.db.query<{ n: number }>(`SELECT count(*) AS n FROM read_parquet('${h!.dir}/events/**/*.parquet', union_by_name = true) WHERE team_id = 1 AND distinct_id IN ('p0', 'p0-device')`))[0]!.n);
    for (let i = 0; i < 100 && (await onDisk()) > 0; i++) await Bun.sleep(50);
    expect(await onDisk()).toBe(0);

    await h.reopen();
    expect(await uuidsOf(h)).toEqual(kept.filter((r) => r.teamId === 1).map((r) => r.uuid).sort());
    expect(h.store.stats().parquetRows + h.store.stats().hotRows).toBe(kept.length);
    // Nothing left of p0: a second erasure changes nothing.
    expect(await h.store.erasePersonEvents(1, P0)).toEqual({ rows: 0, hotRows: 0, filesRewritten: 0, filesDropped: 0, bytesRewritten: 0, copiesRewritten: 0, copyBytesRewritten: 0 });
  });

  test('a stale copy (its day merged since) is cleaned too', async () => {
    h = await openHarness({ purgeGraceMs: 0 });
    await h.store.append(rows().filter((r) => r.teamId === 1 && r.timestamp < day(1, 0)));
    await h.store.compact();
    expect(await h.store.buildPersonCopies()).toBe(1);
    await h.store.append([makeEvent(5000, { distinctId: 'p1', timestamp: day(0, 3) })]);
    await h.store.flush();
    await h.store.compact(); // merged: the copy's source is gone
    const erased = await h.store.erasePersonEvents(1, P0);
    expect([erased.filesRewritten, erased.copiesRewritten]).toEqual([1, 1]);
    const [copy] = await h.db.query<{ path: string }>('SELECT path FROM event_person_files');
    const order = await fileOrder(h, `${h.dir}/events/by-person/${copy!.path}`);
    expect(order.length).toBe(100);
    expect(order.some(([d]) => d === 'p0' || d === 'p0-device')).toBe(false);
  });
});
