import { afterEach, describe, expect, test } from 'bun:test';
import { copyFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EVENT_COLUMNS } from '../../../src/core/events/columns';
import { makeEvent, openHarness, testClock, uuidsOf, type Harness } from './helpers';

let h: Harness | null = null;
afterEach(async () => {
  await h?.cleanup();
  h = null;
});

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
const walDir = (hh: Harness) => join(hh.dir, 'events', 'wal');

describe('queries see every tier', () => {
  test('buffered, native and Parquet rows together, each once, with every column', async () => {
    h = await openHarness({ bufferMaxAgeMs: 60_000, directMinRows: 40 });
    await h.store.append(range(0, 50).map((n) => makeEvent(n)));
    await h.store.flush(); // 0..49: a large load, straight to Parquet
    expect(h.store.stats()).toMatchObject({ parquetRows: 50, hotRows: 0 });
    await h.store.append(range(50, 80).map((n) => makeEvent(n)));
    await h.store.flush(); // 50..79 -> native
    await h.store.append(range(80, 100).map((n) => makeEvent(n))); // 80..99 buffered in the log
    expect(h.store.stats().bufferedRows).toBe(20);
    expect(h.store.stats().parquetRows).toBe(50);

    const rel = await h.store.eventsRelation(1);
    const rows = await h.db.query(`SELECT * FROM ${rel.sql} AS events ORDER BY timestamp`, rel.params);
    expect(rows.length).toBe(100);
    expect(Object.keys(rows[0])).toEqual([...EVENT_COLUMNS]);
    const src = makeEvent(42);
    const r42 = rows[42];
    expect(r42).toEqual({
      uuid: src.uuid,
      team_id: 1,
      event: '$pageview',
      distinct_id: src.distinctId,
      person_id: null,
      properties: src.properties,
      timestamp: new Date(src.timestamp),
      created_at: new Date(src.createdAt),
      elements_chain: '',
      mat_browser: 'Firefox',
      mat_os: 'Mac OS X',
      mat_current_url: 'https://example.com/42',
      mat_session_id: 's-0',
    });
  });

  test('latest 100 and time windows over Parquet and hot data', async () => {
    h = await openHarness();
    await h.store.append(range(0, 300).map((n) => makeEvent(n)));
    await h.store.compact();
    await h.store.append(range(300, 350).map((n) => makeEvent(n)));
    const rel = await h.store.eventsRelation(1);
    const latest = await h.db.query<{ uuid: string }>(`SELECT uuid FROM ${rel.sql} AS events ORDER BY timestamp DESC LIMIT 100`);
    expect(latest.map((r) => r.uuid)).toEqual(range(250, 350).reverse().map((n) => makeEvent(n).uuid));

    const from = makeEvent(100).timestamp;
    const to = makeEvent(120).timestamp;
    const windowed = await h.store.eventsRelation(1, { from, to });
    const rows = await h.db.query<{ n: number }>(`SELECT count(*) AS n FROM ${windowed.sql} AS events`);
    expect(rows[0].n).toBe(20);
  });

  test('teams are kept apart and a team can be deleted', async () => {
    h = await openHarness();
    await h.store.append([...range(0, 10).map((n) => makeEvent(n)), ...range(10, 15).map((n) => makeEvent(n, { teamId: 2 }))]);
    await h.store.compact();
    await h.store.append([makeEvent(20, { teamId: 2 }), makeEvent(21)]);
    expect((await uuidsOf(h, 1)).length).toBe(11);
    expect((await uuidsOf(h, 2)).length).toBe(6);
    await h.store.deleteTeamEvents(2);
    expect((await uuidsOf(h, 2)).length).toBe(0);
    expect((await uuidsOf(h, 1)).length).toBe(11);
    expect(await readdir(join(h.dir, 'events', 'parquet'))).toEqual(['1']);
  });

  test('streamQuery yields every row in chunks and can stop early', async () => {
    h = await openHarness();
    await h.store.append(range(0, 5000).map((n) => makeEvent(n)));
    const rel = await h.store.eventsRelation(1);
    let count = 0;
    let chunks = 0;
    for await (const chunk of h.store.streamQuery(`SELECT uuid, timestamp FROM ${rel.sql} AS events`)) {
      count += chunk.length;
      chunks++;
    }
    expect(count).toBe(5000);
    expect(chunks).toBeGreaterThan(1);
    for await (const chunk of h.store.streamQuery(`SELECT uuid FROM ${rel.sql} AS events`)) {
      expect(chunk.length).toBeGreaterThan(0);
      break; // returns the reader connection
    }
    expect((await uuidsOf(h)).length).toBe(5000);
  });

  test('aborting the signal interrupts a running statement', async () => {
    h = await openHarness();
    const controller = new AbortController();
    const rows = h.store.streamQuery('SELECT count(*) AS n FROM range(100000000000) a', [], { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    // Interrupted, it is the API's time-out (without the interrupt it would run for hours).
    await expect(rows.next()).rejects.toThrow('The query did not finish in time. Narrow it down (a time range, fewer events) and retry.');
    expect((await uuidsOf(h)).length).toBe(0); // the reader connection is usable again
  });
});

const TARGETS = [
  { name: 'loads into the hot table', directMinRows: Number.MAX_SAFE_INTEGER },
  { name: 'loads straight to Parquet', directMinRows: 1 },
];

describe.each(TARGETS)('idempotence, $name', ({ directMinRows }) => {
  test('a client retry with the same uuids stores each event once', async () => {
    h = await openHarness({ purgeGraceMs: 60_000, directMinRows });
    const batch = range(0, 200).map((n) => makeEvent(n));
    await h.store.append(batch);
    await h.store.append([...batch.slice(0, 100), makeEvent(500), makeEvent(500)]); // retry + duplicate in one batch
    // Loaded before counting: a busy machine may take longer than a query's wait (0.5 s) to load them.
    await h.store.flush();
    expect((await uuidsOf(h)).length).toBe(201);
    await h.store.compact(); // hot copies kept for the grace period still dedupe retries
    await h.store.append(batch.slice(100));
    await h.store.flush();
    expect((await uuidsOf(h)).length).toBe(201);
    expect(h.store.stats().duplicateRowsSkipped).toBe(201);
  });

  test('loads of certainly new rows skip reading the recent files; retries and repeats take the full check; after a restart the files made before are read', async () => {
    h = await openHarness({ purgeGraceMs: 60_000, directMinRows, dedupeFilterRows: 100, dedupeWindowMs: 300 });
    await h.store.append(range(0, 800).map((n) => makeEvent(n)));
    await h.store.flush();
    await h.store.append(range(1000, 1050).map((n) => makeEvent(n)));
    await h.store.flush();
    // Both loads certainly new; the second reads the first's file only because the filter (8
    // generations of 100 here) has just dropped the generation of its oldest rows.
    expect(h.store.stats()).toMatchObject({ freshLoads: 2, priorFilesRead: directMinRows === 1 ? 1 : 0 });
    // A retry of rows just loaded (in the recent files or the hot table), and a repeat within one batch.
    await h.store.append([...range(1040, 1050).map((n) => makeEvent(n)), makeEvent(2000), makeEvent(2000)]);
    await h.store.flush();
    expect(h.store.stats().freshLoads).toBe(2);
    const all = range(0, 800).concat(range(1000, 1050), [2000]);
    expect(await uuidsOf(h)).toEqual(all.map((n) => makeEvent(n).uuid));
    expect(h.store.stats().duplicateRowsSkipped).toBe(11);
    // Restarted: the filter is empty and knows nothing of the files (or hot rows) made before, so
    // a retry of the last batch looks new to it, yet those are read and the retry is dropped.
    await h.reopen();
    await h.store.append(range(1045, 1055).map((n) => makeEvent(n)));
    await h.store.flush();
    expect(h.store.stats()).toMatchObject({ freshLoads: 1, duplicateRowsSkipped: 5 });
    if (directMinRows === 1) expect(h.store.stats().priorFilesRead).toBeGreaterThan(0);
    expect(await uuidsOf(h)).toEqual(all.concat(range(1050, 1055)).sort((a, b) => a - b).map((n) => makeEvent(n).uuid));
  });

  test('a retry long after its original (past the dedupe window, in an older file) is dropped at load', async () => {
    h = await openHarness({ purgeGraceMs: 0, directMinRows, dedupeWindowMs: 0 });
    await h.store.append(range(0, 50).map((n) => makeEvent(n)));
    await h.store.compact(); // the originals now live only in Parquet, outside the recent-files window
    // Another project's events at the same times: their files are not candidates, nor dropped.
    await h.store.append(range(0, 5).map((n) => makeEvent(n, { teamId: 2, uuid: `00000000-0000-7000-9000-${String(n).padStart(12, '0')}` })));
    await h.store.append([...range(10, 20).map((n) => makeEvent(n)), makeEvent(60), makeEvent(61)]);
    const ids = await uuidsOf(h); // before any compaction: no duplicate is ever visible
    expect(ids).toEqual(range(0, 50).concat([60, 61]).map((n) => makeEvent(n).uuid));
    expect(h.store.stats().duplicateRowsSkipped).toBe(10);
    expect((await uuidsOf(h, 2)).length).toBe(5);
  });

  test('a late retry that reaches Parquet again is dropped by the next compaction', async () => {
    h = await openHarness({ purgeGraceMs: 0, directMinRows, dedupeWindowMs: 0 });
    await h.store.append(range(0, 50).map((n) => makeEvent(n)));
    await h.store.compact();
    await h.store.append(range(0, 10).map((n) => makeEvent(n)));
    await h.store.compact();
    const ids = await uuidsOf(h);
    expect(ids.length).toBe(50);
    expect(new Set(ids).size).toBe(50);
  });

  test('replaying a WAL segment that was already loaded (crash before its delete) adds nothing', async () => {
    h = await openHarness({ bufferMaxAgeMs: 60_000, directMinRows });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let saved = '';
    await h.reopen({
      bufferMaxAgeMs: 60_000,
      directMinRows,
      hooks: {
        async beforeLoad(segments) {
          if (!saved) {
            saved = segments[0].path;
            await copyFile(saved, `${saved}.bak`);
          }
          await gate;
        },
      },
    });
    await h.store.append(range(0, 100).map((n) => makeEvent(n)));
    const flushed = h.store.flush();
    while (!saved) await Bun.sleep(5);
    release();
    await flushed;
    expect((await readdir(walDir(h))).filter((n) => n.endsWith('.wal'))).toEqual([]);
    // Put the loaded segment back, as if the process died between the commit and the delete.
    await copyFile(`${saved}.bak`, saved);
    await h.reopen();
    expect((await uuidsOf(h)).length).toBe(100);
    // And the same bytes under a new segment id (a replay after a lost watermark): deduped by uuid.
    await h.store.close();
    await copyFile(`${saved}.bak`, join(walDir(h), 'seg-0000000000009999.wal'));
    await h.reopen();
    expect((await uuidsOf(h)).length).toBe(100);
    expect(h.store.stats().duplicateRowsSkipped).toBe(100);
  });
});

describe.each(TARGETS)('idempotence, rows the uuid filter vouches for, $name', ({ directMinRows }) => {
  test('a load of new rows skips older files (and hot rows) the filter still holds; once they have left it, they are read and a late retry is dropped', async () => {
    h = await openHarness({ purgeGraceMs: 60_000, directMinRows, dedupeWindowMs: 0, dedupeFilterRows: 100 });
    const files = directMinRows === 1 ? 2 : 0;
    const other = (n: number) => makeEvent(n, { uuid: `00000000-0000-7000-9000-${String(n).padStart(12, '0')}` });
    await h.store.append(range(0, 50).map((n) => makeEvent(n)));
    await h.store.flush(); // file A (or hot rows): seconds 0..49
    // New uuids at times A covers: A is a candidate, but every row of it is in the filter.
    await h.store.append(range(10, 20).map(other));
    await h.store.flush(); // file B: seconds 10..19
    expect(h.store.stats()).toMatchObject({ freshLoads: 2, priorFilesRead: 0 });
    // 1,000 later rows (8 generations of 100 are held): A's and B's uuids leave the filter.
    await h.store.append(range(1000, 2000).map((n) => makeEvent(n)));
    await h.store.flush();
    expect(h.store.stats()).toMatchObject({ freshLoads: 3, priorFilesRead: 0 });
    // A retry of row 5 now looks new to the filter: A and B are read, and the retry is dropped.
    await h.store.append([makeEvent(5), other(30)]);
    await h.store.flush();
    expect(h.store.stats()).toMatchObject({ freshLoads: 4, priorFilesRead: files, duplicateRowsSkipped: 1 });
    const ids = await uuidsOf(h);
    const expected = [...range(0, 50).map((n) => makeEvent(n).uuid), ...range(10, 20).map((n) => other(n).uuid), other(30).uuid, ...range(1000, 2000).map((n) => makeEvent(n).uuid)];
    expect(ids).toEqual(expected.sort());
  });
});

describe('idempotence: files merged from rows loaded long ago', () => {
  test("a merge of files loaded before the dedupe window is not one of the window's files: a load of new rows does not read it once the filter has let its rows go, and a late retry still finds its original there", async () => {
    const clock = testClock();
    h = await openHarness({ directMinRows: 1, purgeGraceMs: 60_000, dedupeWindowMs: 60_000, dedupeFilterRows: 100, now: clock.now });
    await h.store.append(range(0, 50).map((n) => makeEvent(n)));
    await h.store.flush();
    await h.store.append(range(50, 100).map((n) => makeEvent(n)));
    await h.store.flush(); // two files, their rows loaded now
    clock.advance(61_000);
    await h.store.compact(); // one file made of them now, of rows loaded 61 s ago
    expect(h.store.stats().parquetFiles).toBe(1);
    // 800 later rows, at later times: 8 generations of 100 are held, so the merged rows leave the
    // filter (the later ones stay in it), and their file, written a moment ago but of rows loaded
    // before the window, is not read.
    for (let from = 1000; from < 1800; from += 200) {
      await h.store.append(range(from, from + 200).map((n) => makeEvent(n)));
      await h.store.flush();
    }
    expect(h.store.stats()).toMatchObject({ freshLoads: 6, priorFilesRead: 0 });
    // A retry of row 5 looks new to the filter: its time brings the merged file in, and it is dropped.
    await h.store.append([makeEvent(5)]);
    await h.store.flush();
    expect(h.store.stats().duplicateRowsSkipped).toBe(1);
    expect(await uuidsOf(h)).toEqual([...range(0, 100), ...range(1000, 1800)].map((n) => makeEvent(n).uuid));
  });
});

describe('idempotence: files compacted from hot rows', () => {
  test('a compacted file stands for the hot loads it holds: a load of new rows does not read it while the filter holds its rows, nor, once they have left it, as a file of rows loaded lately; a late retry still finds its original there', async () => {
    const clock = testClock();
    // Every load goes to the hot table; the filter holds 8 generations of 100 uuids.
    h = await openHarness({ directMinRows: 1_000_000, purgeGraceMs: 60_000, dedupeWindowMs: 60_000, dedupeFilterRows: 100, now: clock.now });
    const other = (n: number) => makeEvent(n, { uuid: `00000000-0000-7000-9000-${String(n).padStart(12, '0')}` });
    await h.store.append(range(0, 50).map((n) => makeEvent(n)));
    await h.store.flush(); // hot rows: seconds 0..49, loaded now
    clock.advance(61_000);
    await h.store.compact(); // one file of them, written 61 s after they were loaded
    expect(h.store.stats()).toMatchObject({ parquetFiles: 1, hotRows: 0 });
    // New uuids at times the file covers: every row of it is in the filter, so it is not read.
    await h.store.append(range(10, 20).map(other));
    await h.store.flush();
    expect(h.store.stats()).toMatchObject({ freshLoads: 2, priorFilesRead: 0 });
    // 1,000 later rows at later times: the file's rows leave the filter, and the file, written
    // within the dedupe window but of rows loaded before it, is not one of the window's files.
    for (let from = 1000; from < 2000; from += 200) {
      await h.store.append(range(from, from + 200).map((n) => makeEvent(n)));
      await h.store.flush();
    }
    expect(h.store.stats()).toMatchObject({ freshLoads: 7, priorFilesRead: 0 });
    // The hot copies of the compacted rows go once their grace has passed: row 5 is only in a file.
    clock.advance(61_000);
    await h.store.compact();
    expect(h.store.stats()).toMatchObject({ parquetFiles: 1, hotRows: 0 });
    // A retry of row 5 looks new to the filter: its time brings the file in, and it is dropped.
    await h.store.append([makeEvent(5)]);
    await h.store.flush();
    expect(h.store.stats()).toMatchObject({ freshLoads: 8, priorFilesRead: 1, duplicateRowsSkipped: 1 });
    const expected = [...range(0, 50).map((n) => makeEvent(n).uuid), ...range(10, 20).map((n) => other(n).uuid), ...range(1000, 2000).map((n) => makeEvent(n).uuid)];
    expect(await uuidsOf(h)).toEqual(expected.sort());
  });
});

describe('large appends', () => {
  // ~1 KB properties: a 2,048-row slice fills a reused encoding buffer (store.ts), so a buffer
  // handed back before its frame is on disk would show up here as rows carrying another's data.
  const big = (n: number, batch: number) => makeEvent(n, { properties: JSON.stringify({ n, batch, pad: 'x'.repeat(900 + (n % 50)) }) });

  test.each(['durable', 'relaxed'] as const)('concurrent batches of 5,000 are stored whole, each row with its own data (%s)', async (durability) => {
    h = await openHarness({ durability, bufferMaxAgeMs: 60_000 });
    const batches = [0, 1, 2, 3, 4, 5].map((b) => range(b * 5000, (b + 1) * 5000).map((n) => big(n, b)));
    await Promise.all(batches.slice(0, 3).map((rows) => h!.store.append(rows)));
    // Then three more, reusing the buffers the first three returned.
    await Promise.all(batches.slice(3).map((rows) => h!.store.append(rows)));
    await h.store.flush();
    const rel = await h.store.eventsRelation(1);
    const rows = await h.db.query<{ uuid: string; properties: string }>(`SELECT uuid, properties FROM ${rel.sql} AS events ORDER BY uuid`, rel.params);
    expect(rows.length).toBe(30_000);
    const want = batches.flat().sort((a, b) => (a.uuid < b.uuid ? -1 : 1));
    let mismatched = 0;
    for (let i = 0; i < rows.length; i++) if (rows[i].uuid !== want[i].uuid || rows[i].properties !== want[i].properties) mismatched++;
    expect(mismatched).toBe(0);
  });

  test('a bad row anywhere in a large batch refuses all of it; the appends behind it go on', async () => {
    h = await openHarness({ bufferMaxAgeMs: 60_000 });
    const bad = range(0, 5000).map((n) => big(n, 0));
    bad[4500] = { ...bad[4500], timestamp: Number.NaN };
    const refused = h.store.append(bad);
    const after = h.store.append(range(10_000, 13_000).map((n) => big(n, 1)));
    await expect(refused).rejects.toThrow(/finite timestamps/);
    await after;
    await h.store.flush();
    const stored = await uuidsOf(h);
    expect(stored.length).toBe(3000);
    expect(stored[0]).toBe(makeEvent(10_000).uuid);
  });
});

describe('recovery', () => {
  test('acknowledged rows still in the log are loaded by the next open', async () => {
    h = await openHarness({ bufferMaxAgeMs: 60_000, hooks: { beforeLoad: () => new Promise(() => undefined) } });
    await h.store.append(range(0, 300).map((n) => makeEvent(n)));
    expect(h.store.stats().bufferedRows).toBe(300);
    // No close: the process "dies" with everything in the log. Reopen on the same files.
    h.store = { close: async () => undefined } as typeof h.store;
    await h.reopen({ hooks: {} });
    expect((await uuidsOf(h)).length).toBe(300);
  });

  test('close flushes, and the next open finds everything in DuckDB', async () => {
    h = await openHarness({ bufferMaxAgeMs: 60_000 });
    await h.store.append(range(0, 100).map((n) => makeEvent(n)));
    await h.store.close();
    expect((await readdir(walDir(h))).filter((n) => n.endsWith('.wal'))).toEqual([]);
    await h.reopen();
    expect(h.store.stats().bufferedRows).toBe(0);
    expect((await uuidsOf(h)).length).toBe(100);
  });

  test('relaxed durability keeps the same contract across a reopen', async () => {
    h = await openHarness({ durability: 'relaxed' });
    await h.store.append(range(0, 100).map((n) => makeEvent(n)));
    expect(h.store.stats().durability).toBe('relaxed');
    await h.reopen({ durability: 'relaxed' });
    expect((await uuidsOf(h)).length).toBe(100);
  });
});
