import { afterEach, describe, expect, test } from 'bun:test';
import { copyFile, mkdir, readdir, rename, stat, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { makeEvent, openHarness, testClock, until, type Harness } from '../helpers';
import { disjointNewestFirst } from '../../../../src/storage/events/read/relation';
import { Maintenance } from '../../../../src/storage/events/tiers/maintenance';
import { Tiers } from '../../../../src/storage/events/tiers/tiers';
import { newCounters, resolveSettings } from '../../../../src/storage/events/settings';

let h: Harness | null = null;
afterEach(async () => {
  await h?.cleanup();
  h = null;
});

const DAY = 86_400_000;
const parquetDir = (hh: Harness) => join(hh.dir, 'events', 'parquet');

async function allRows(hh: Harness, teamId = 1) {
  const rel = await hh.store.eventsRelation(teamId);
  return hh.db.query(`SELECT * FROM ${rel.sql} AS events ORDER BY uuid`, rel.params);
}

/** The `n` property of a file's rows, in the order the file holds them. */
async function inFileOrder(hh: Harness, file: string): Promise<number[]> {
  const rows = await hh.db.query<{ n: number }>(`SELECT json_extract(properties, '$.n')::INTEGER AS n FROM read_parquet('${join(parquetDir(hh), file)}')`);
  return rows.map((r) => r.n);
}

/** The rows of each row group of a file, in order. */
async function rowGroupRows(hh: Harness, file: string): Promise<number[]> {
  const rows = await hh.db.query<{ n: number }>(`SELECT DISTINCT row_group_id, row_group_num_rows AS n FROM parquet_metadata('${join(parquetDir(hh), file)}') ORDER BY row_group_id`);
  return rows.map((r) => Number(r.n));
}

async function parquetFiles(hh: Harness): Promise<string[]> {
  const root = parquetDir(hh);
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(root, join(e.parentPath, e.name))).sort();
}

/** Bytes of DuckDB's own WAL. */
const walBytes = async (hh: Harness) => (await stat(`${hh.db.path}.wal`).catch(() => ({ size: 0 }))).size;

/** `count` loads of 200 rows, each small enough for the hot table: through DuckDB's WAL. */
async function smallLoads(hh: Harness, count: number) {
  for (let i = 0; i < count; i++) {
    await hh.store.append(Array.from({ length: 200 }, (_, n) => makeEvent(i * 200 + n)));
    await hh.store.flush();
  }
}

describe('compaction', () => {
  test('the same rows before and after, in day partitions named from ids, sorted by time', async () => {
    h = await openHarness();
    // Two teams, three days, arriving out of order, with hostile event names.
    const rows = Array.from({ length: 600 }, (_, n) =>
      makeEvent(n, { teamId: 1 + (n % 2), timestamp: Date.UTC(2024, 0, 1) + ((n * 7_919_000) % (3 * DAY)), event: n % 5 ? '$pageview' : '../../etc/passwd' }),
    );
    await h.store.append(rows);
    await h.store.flush();
    const before1 = await allRows(h, 1);
    const before2 = await allRows(h, 2);
    await h.store.compact();
    expect(h.store.stats()).toMatchObject({ hotRows: 0, parquetRows: 600, compactions: 1 });
    expect(await allRows(h, 1)).toEqual(before1);
    expect(await allRows(h, 2)).toEqual(before2);
    const files = await parquetFiles(h);
    expect(files.length).toBe(6);
    for (const f of files) expect(f).toMatch(/^[12]\/2024-01-0[123]\/c\d+-\d+\.parquet$/);
    // Sorted by time within each file, newest first (what "latest N" reads first).
    for (const f of files) {
      const ts = await h.db.query<{ t: Date }>(`SELECT timestamp AS t FROM read_parquet('${join(parquetDir(h), f)}')`);
      const ms = ts.map((r) => r.t.getTime());
      expect(ms).toEqual([...ms].sort((a, b) => b - a));
    }
    // Survives a reopen (the manifest is the source of truth).
    await h.reopen();
    expect(await allRows(h, 1)).toEqual(before1);
  });

  test('unregistered and half-written files are never read and are removed at start-up', async () => {
    h = await openHarness();
    await h.store.append(Array.from({ length: 100 }, (_, n) => makeEvent(n)));
    await h.store.compact();
    const [file] = await parquetFiles(h);
    // A copy the manifest does not know (a compaction that died before its commit)...
    await copyFile(join(parquetDir(h), file), join(parquetDir(h), '1', '2024-01-01', 'c999-0.parquet'));
    // ...and a torn file in a temporary directory.
    await mkdir(join(parquetDir(h), '.tmp-1000', 'team_id=1', '_day=2024-01-01'), { recursive: true });
    await writeFile(join(parquetDir(h), '.tmp-1000', 'team_id=1', '_day=2024-01-01', 'part_0.parquet'), 'PAR1 torn');
    expect((await allRows(h)).length).toBe(100);
    await h.reopen();
    expect((await allRows(h)).length).toBe(100);
    expect(await parquetFiles(h)).toEqual([file]);
  });

  test('background compaction runs by size and purges hot copies after the grace period', async () => {
    const clock = testClock();
    h = await openHarness({ autoCompact: true, compactMinRows: 200, purgeGraceMs: 30_000, now: clock.now });
    const hh = h;
    const hotCopies = async () => (await hh.db.query<{ n: number }>('SELECT count(*) AS n FROM events_hot'))[0].n;
    for (let i = 0; i < 5; i++) await h.store.append(Array.from({ length: 100 }, (_, n) => makeEvent(i * 100 + n)));
    await h.store.flush();
    await until(() => hh.store.stats().compactions > 0);
    expect(await hotCopies()).toBe(500); // compacted, but kept for the grace period
    clock.advance(30_000);
    await until(async () => (await hotCopies()) <= 100);
    expect(h.store.stats().compactions).toBeGreaterThan(0);
    const ids = (await allRows(h)).map((r) => r.uuid);
    expect(ids.length).toBe(500);
    expect(new Set(ids).size).toBe(500);
  });

  test("DuckDB's own WAL is checkpointed once it passes checkpointWalBytes (DuckDB holds what it has not checkpointed in memory too)", async () => {
    const clock = testClock();
    h = await openHarness({ autoCompact: true, compactMinRows: 1_000_000, checkpointWalBytes: 256 * 1024, now: clock.now });
    const hh = h;
    await smallLoads(h, 6);
    expect(await walBytes(hh)).toBeGreaterThan(256 * 1024);
    expect(h.store.stats().checkpoints).toBe(0);
    clock.advance(5_000);
    await until(() => hh.store.stats().checkpoints > 0);
    expect(await walBytes(hh)).toBeLessThan(256 * 1024);
    expect((await allRows(h)).length).toBe(1200);
  });

  test("DuckDB's WAL is checkpointed past the threshold while other upkeep (a merge, a copy) still runs", async () => {
    h = await openHarness({ compactMinRows: 1_000_000 });
    const hh = h;
    await smallLoads(h, 6);
    expect(await walBytes(hh)).toBeGreaterThan(256 * 1024);
    // An upkeep of its own, over the same database, on a clock of its own (the store's stands still).
    const clock = testClock();
    const counters = newCounters();
    const upkeep = new Maintenance(h.db, resolveSettings({ dataDir: h.dir, checkpointWalBytes: 256 * 1024, autoCompact: false, now: clock.now }), new Tiers({ compactedSegment: 0, files: [] }), counters, {
      loadedSegment: () => 0,
      saturated: () => false,
      backlog: () => false,
    });
    let release = () => undefined as void;
    const held = upkeep.exclusive(() => new Promise<void>((r) => (release = r)));
    try {
      clock.advance(5_000);
      upkeep.tick();
      await until(() => counters.checkpoints > 0);
      expect(await walBytes(hh)).toBeLessThan(256 * 1024);
    } finally {
      release();
      await held;
    }
  });

  test('small files of a team-day are merged into one sorted file, same rows, old files gone after the grace period', async () => {
    h = await openHarness({ directMinRows: 1, purgeGraceMs: 0, autoCompact: true, mergeMinFiles: 4, mergeMinAgeMs: 0 });
    const appendLoad = async (from: number) => {
      await h!.store.append(Array.from({ length: 50 }, (_, i) => makeEvent(from + i)));
      await h!.store.flush();
    };
    await appendLoad(0);
    const before = await allRows(h);
    await appendLoad(50);
    await appendLoad(100);
    await appendLoad(150);
    const expected = [...before, ...(await allRows(h)).slice(50)].sort((a, b) => String(a.uuid).localeCompare(String(b.uuid)));
    await until(async () => (await parquetFiles(h!)).length === 1);
    expect(h.store.stats().merges).toBe(1);
    const files = await parquetFiles(h);
    expect(files).toHaveLength(1);
    expect(files[0]).toMatch(/^1\/2024-01-01\/m\d+-\d+\.parquet$/);
    expect(await allRows(h)).toEqual(expected);
    // The loads did not overlap in time: concatenated newest first, the file is sorted throughout.
    const inFileOrder = await h.db.query<{ n: number }>(`SELECT json_extract(properties, '$.n')::INTEGER AS n FROM read_parquet('${join(parquetDir(h), files[0] as string)}')`);
    expect(inFileOrder.map((r) => r.n)).toEqual(Array.from({ length: 200 }, (_, i) => 199 - i));
    expect(await h.db.query('SELECT sorted FROM event_parquet_files')).toEqual([{ sorted: true }]);
    // The four loads' row groups copied as they are (written again, the 200 rows would be one group).
    expect(await rowGroupRows(h, files[0] as string)).toEqual([50, 50, 50, 50]);
    expect(await h.store.newestFirstRelation(1, {})).not.toBeNull();
    await h.reopen();
    expect(await allRows(h)).toEqual(expected);
  });

  test("files of different columns (an older version's JSON properties) cannot be joined by copying: the merge writes their rows, the same rows", async () => {
    h = await openHarness({ directMinRows: 1, purgeGraceMs: 0, mergeMinFiles: 2, mergeMinAgeMs: 0 });
    await h.store.append(Array.from({ length: 50 }, (_, i) => makeEvent(i)));
    await h.store.flush();
    await h.store.append(Array.from({ length: 50 }, (_, i) => makeEvent(50 + i)));
    await h.store.flush();
    const [older] = await parquetFiles(h);
    const old = join(parquetDir(h), older as string);
    await h.db.run(`COPY (SELECT * REPLACE (properties::JSON AS properties) FROM read_parquet('${old}')) TO '${old}.tmp' (FORMAT parquet)`);
    await rename(`${old}.tmp`, old);
    const expected = await allRows(h);
    await h.store.compact();
    expect(h.store.stats().merges).toBe(1);
    const files = await parquetFiles(h);
    expect(files).toHaveLength(1);
    expect(await rowGroupRows(h, files[0] as string)).toEqual([100]);
    expect(await allRows(h)).toEqual(expected);
  });

  test("neither loads, merges nor reads keep Parquet footers in DuckDB's cache (a merged-away file's would stay there)", async () => {
    h = await openHarness({ directMinRows: 1, purgeGraceMs: 0, autoCompact: true, mergeMinFiles: 4, mergeMinAgeMs: 0 });
    for (let from = 0; from < 200; from += 50) {
      await h.store.append(Array.from({ length: 50 }, (_, i) => makeEvent(from + i)));
      await h.store.flush();
    }
    await until(async () => (await parquetFiles(h!)).length === 1);
    expect(h.store.stats().merges).toBe(1);
    const footers = async () => Number((await h!.db.query<{ m: number }>("SELECT memory_usage_bytes AS m FROM duckdb_memory() WHERE tag = 'OBJECT_CACHE'"))[0]?.m ?? 0);
    expect(await footers()).toBe(0);
    expect(await allRows(h)).toHaveLength(200);
    expect(await footers()).toBe(0);
  });

  test('files overlapping in time merge without a sort into sorted runs, which reads never take for one order', async () => {
    h = await openHarness({ directMinRows: 1, purgeGraceMs: 0, autoCompact: true, mergeMinFiles: 3, mergeMinAgeMs: 0 });
    // Three loads of interleaved times: each file is sorted, their time ranges overlap.
    for (const k of [0, 1, 2]) {
      await h.store.append(Array.from({ length: 40 }, (_, i) => makeEvent(3 * i + k)));
      await h.store.flush();
    }
    const expected = await allRows(h);
    await until(async () => (await parquetFiles(h!)).length === 1);
    const files = await parquetFiles(h);
    expect(files).toHaveLength(1);
    expect(await allRows(h)).toEqual(expected);
    // Three runs, newest file first, each newest first.
    const run = (k: number) => Array.from({ length: 40 }, (_, i) => 3 * (39 - i) + k);
    expect(await inFileOrder(h, files[0] as string)).toEqual([...run(2), ...run(1), ...run(0)]);
    expect(await h.db.query('SELECT sorted FROM event_parquet_files')).toEqual([{ sorted: false }]);
    // Nothing reads it as if it were in one order; a sorted read gives every row in order.
    expect(await h.store.newestFirstRelation(1, {})).toBeNull();
    const rel = await h.store.eventsRelation(1);
    const latest = await h.db.query<{ n: number }>(`SELECT json_extract(properties, '$.n')::INTEGER AS n FROM ${rel.sql} AS events ORDER BY timestamp DESC LIMIT 5`);
    expect(latest.map((r) => r.n)).toEqual([119, 118, 117, 116, 115]);
    await h.reopen();
    expect(await h.store.newestFirstRelation(1, {})).toBeNull();
    expect(await allRows(h)).toEqual(expected);
  });

  test('a file of sorted runs stays one when merged beside files disjoint from it: the merge keeps the flag', async () => {
    h = await openHarness({ directMinRows: 1, purgeGraceMs: 0, mergeMinFiles: 2, mergeMinAgeMs: 0 });
    // A file of two interleaved runs, registered as such (sorted = false): rows 0..79, odd ones first.
    const day = join(parquetDir(h), '1', '2024-01-01');
    await mkdir(day, { recursive: true });
    const runs = Array.from({ length: 40 }, (_, i) => makeEvent(79 - 2 * i)).concat(Array.from({ length: 40 }, (_, i) => makeEvent(78 - 2 * i)));
    await h.store.append(runs);
    await h.store.compact();
    const [loaded] = await parquetFiles(h);
    const legacy = join('1', '2024-01-01', 'legacy-0.parquet');
    await h.db.run(`COPY (SELECT * FROM read_parquet('${join(parquetDir(h), loaded as string)}') ORDER BY json_extract(properties, '$.n')::INTEGER % 2 DESC, timestamp DESC) TO '${join(parquetDir(h), legacy)}' (FORMAT parquet)`);
    expect(await inFileOrder(h, legacy)).toEqual(runs.map((e) => JSON.parse(e.properties).n));
    await h.db.run(`UPDATE event_parquet_files SET path = ?, sorted = false`, [legacy]);
    await h.reopen({ directMinRows: 1, purgeGraceMs: 0, mergeMinFiles: 2, mergeMinAgeMs: 0 });
    expect(await parquetFiles(h)).toEqual([legacy]);
    // A later load, disjoint from it in time: concatenated, the two would still be runs.
    await h.store.append(Array.from({ length: 20 }, (_, i) => makeEvent(100 + i)));
    await h.store.flush();
    await h.store.compact(); // merges every team-day
    const files = await parquetFiles(h);
    expect(files).toHaveLength(1);
    expect(await inFileOrder(h, files[0] as string)).toEqual([...Array.from({ length: 20 }, (_, i) => 119 - i), ...runs.map((e) => JSON.parse(e.properties).n)]);
    expect(await h.db.query('SELECT sorted FROM event_parquet_files')).toEqual([{ sorted: false }]);
    expect(await h.store.newestFirstRelation(1, {})).toBeNull();
  });

  test('files registered as not sorted are read once: one whose rows are newest first is registered as sorted again, runs stay as they are', async () => {
    h = await openHarness({ purgeGraceMs: 0 });
    const DAY_2 = Date.UTC(2024, 0, 2);
    await h.store.append(Array.from({ length: 60 }, (_, i) => makeEvent(i)));
    await h.store.append(Array.from({ length: 80 }, (_, i) => makeEvent(1000 + i, { timestamp: DAY_2 + i * 1000 })));
    await h.store.compact();
    const [first, second] = await parquetFiles(h);
    expect(second).toMatch(/^1\/2024-01-02\//);
    // Day 2's file rewritten as two interleaved runs, odd rows first.
    const legacy = join('1', '2024-01-02', 'legacy-0.parquet');
    await h.db.run(`COPY (SELECT * FROM read_parquet('${join(parquetDir(h), second as string)}') ORDER BY json_extract(properties, '$.n')::INTEGER % 2 DESC, timestamp DESC) TO '${join(parquetDir(h), legacy)}' (FORMAT parquet)`);
    await h.db.run('UPDATE event_parquet_files SET path = ? WHERE path = ?', [legacy, second]);
    // As migration 204 leaves them: nothing known to be sorted.
    await h.db.run('UPDATE event_parquet_files SET sorted = false');
    await h.reopen({ purgeGraceMs: 0 });
    const registered = () => h!.db.query<{ path: string; sorted: boolean }>('SELECT path, sorted FROM event_parquet_files ORDER BY path');
    await until(async () => (await registered()).some((f) => f.sorted));
    expect(await registered()).toEqual([
      { path: first, sorted: true },
      { path: legacy, sorted: false },
    ]);
    // Memory knows it too: day 1 is read in the files' order again, day 2 (runs) is not.
    expect(await h.store.newestFirstRelation(1, { from: Date.UTC(2024, 0, 1), to: DAY_2 })).not.toBeNull();
    expect(await h.store.newestFirstRelation(1, { from: DAY_2, to: DAY_2 + 86_400_000 })).toBeNull();
  });

  test('files carry Bloom filters for distinct_id and uuid, which rule out the row groups without a value', async () => {
    h = await openHarness();
    // 10,000 rows of one day: three row groups, each person's events in one stretch of time.
    const rows = Array.from({ length: 10_000 }, (_, n) => makeEvent(n, { timestamp: Date.UTC(2024, 0, 1) + n * 1000, distinctId: `person-${Math.floor(n / 2_500)}` }));
    await h.store.append(rows);
    await h.store.compact();
    const [file] = await parquetFiles(h);
    const path = join(parquetDir(h), file);
    const blooms = await h.db.query<{ col: string; groups: number; with_bloom: number }>(
      `SELECT path_in_schema AS col, count(*) AS groups, count(bloom_filter_offset) AS with_bloom FROM parquet_metadata('${path}') WHERE path_in_schema IN ('distinct_id', 'uuid') GROUP BY ALL ORDER BY col`,
    );
    expect(blooms).toEqual([
      { col: 'distinct_id', groups: 3, with_bloom: 3 },
      { col: 'uuid', groups: 3, with_bloom: 3 },
    ]);
    // Newest first: person-3 (rows 7,500-9,999) lies in the first group only.
    const probe = (col: string, value: string) =>
      h!.db.query<{ g: number; excluded: boolean }>(`SELECT row_group_id AS g, bloom_filter_excludes AS excluded FROM parquet_bloom_probe('${path}', '${col}', ?) ORDER BY g`, [value]);
    expect(await probe('distinct_id', 'person-3')).toEqual([{ g: 0, excluded: false }, { g: 1, excluded: true }, { g: 2, excluded: true }]);
    expect(await probe('uuid', rows[0]!.uuid)).toEqual([{ g: 0, excluded: true }, { g: 1, excluded: true }, { g: 2, excluded: false }]);
    // Lookups through the relation still find exactly the rows.
    const rel = await h.store.eventsRelation(1);
    expect((await h.db.query<{ n: number }>(`SELECT count(*) AS n FROM ${rel.sql} AS events WHERE distinct_id = ?`, ['person-3']))[0]?.n).toBe(2_500);
  });

  test('a relation reads newest first without a sort only while its files are disjoint in time', async () => {
    const f = (minTs: number, maxTs: number) => ({ minTs, maxTs });
    expect(disjointNewestFirst([f(20, 30), f(10, 20), f(0, 9)], -Infinity, Infinity)).toBe(true);
    expect(disjointNewestFirst([f(20, 30), f(10, 21)], -Infinity, Infinity)).toBe(false);
    // Only the part inside the range counts.
    expect(disjointNewestFirst([f(20, 30), f(10, 25)], -Infinity, 20)).toBe(true);
    expect(disjointNewestFirst([f(20, 30), f(10, 25)], 26, Infinity)).toBe(true);
    h = await openHarness({ mergeMaxFileRows: 10 }); // no merges: each load stays a file
    // Two loads of interleaved times (their files overlap), then one later load.
    await h.store.append(Array.from({ length: 50 }, (_, n) => makeEvent(2 * n)));
    await h.store.compact();
    await h.store.append(Array.from({ length: 50 }, (_, n) => makeEvent(2 * n + 1)));
    await h.store.compact();
    await h.store.append(Array.from({ length: 50 }, (_, n) => makeEvent(200 + n)));
    await h.store.compact();
    const at = (n: number) => Date.UTC(2024, 0, 1) + n * 1000;
    expect((await h.store.eventsRelation(1)).newestFirst()).toBeNull();
    const later = (await h.store.eventsRelation(1, { from: at(150) })).newestFirst() as string;
    const rows = await h.db.query<{ n: number }>(`SELECT json_extract(properties, '$.n')::INTEGER AS n FROM ${later} AS events`);
    expect(rows.map((r) => r.n)).toEqual(Array.from({ length: 50 }, (_, i) => 249 - i));
    expect(await h.store.newestFirstRelation(1, { from: at(150) })).toBe(later);
    // Rows in the hot table have no place in that order: a range holding some gets none.
    await h.store.append([makeEvent(300)]);
    await h.store.flush();
    expect(await h.store.newestFirstRelation(1, { from: at(150) })).toBeNull();
    expect(await h.store.newestFirstRelation(1, { from: at(150), to: at(300) })).not.toBeNull();
  });

  test('properties are stored as plain text, and files of the older JSON type read the same alongside', async () => {
    h = await openHarness({ mergeMaxFileRows: 10 });
    const rows = Array.from({ length: 40 }, (_, n) => makeEvent(n, { timestamp: Date.UTC(2024, 0, 1 + (n % 2), 12) + n * 1000 }));
    await h.store.append(rows);
    await h.store.compact();
    const files = await parquetFiles(h);
    expect(files).toHaveLength(2);
    const types = await h.db.query<{ t: string | null }>(`SELECT logical_type::VARCHAR AS t FROM parquet_schema('${join(parquetDir(h), files[0] as string)}') WHERE name = 'properties'`);
    expect(types).toEqual([{ t: null }]);
    // One file rewritten as an older version wrote it: properties with Parquet's JSON type.
    const old = join(parquetDir(h), files[1] as string);
    await h.db.run(`COPY (SELECT * REPLACE (properties::JSON AS properties) FROM read_parquet('${old}')) TO '${old}.tmp' (FORMAT parquet)`);
    await rename(`${old}.tmp`, old);
    expect((await h.db.query<{ t: string }>(`SELECT logical_type::VARCHAR AS t FROM parquet_schema('${old}') WHERE name = 'properties'`))[0]?.t).toContain('Json');
    const rel = await h.store.eventsRelation(1);
    const read = await h.db.query<{ uuid: string; properties: string; n: number }>(
      `SELECT uuid, properties, json_extract(properties, '$.n')::INTEGER AS n FROM ${rel.sql} AS events ORDER BY uuid`,
    );
    expect(read).toEqual([...rows].sort((a, b) => (a.uuid < b.uuid ? -1 : 1)).map((r) => ({ uuid: r.uuid, properties: r.properties, n: JSON.parse(r.properties).n })));
  });
});
