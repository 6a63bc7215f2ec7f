import { afterEach, describe, expect, test } from 'bun:test';
import { readdir, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { ParquetFile } from '../../../../src/storage/events/tiers/parquet';
import { dueCopies, usableCopies, type PersonCopy } from '../../../../src/storage/events/tiers/person-copies';
import { makeEvent, openHarness, testClock, until, type Harness } from '../helpers';

let h: Harness | null = null;
afterEach(async () => {
  await h?.cleanup();
  h = null;
});

const DAY = 86_400_000;
const NOW = Date.parse('2024-01-10T12:00:00Z');
const MIN = 60_000;

const file = (path: string, day: string, createdAt: number, teamId = 1): ParquetFile => ({
  path,
  teamId,
  day,
  minTs: Date.parse(`${day}T00:00:00Z`),
  maxTs: Date.parse(`${day}T23:00:00Z`),
  rows: 10,
  bytes: 100,
  createdAt,
});
const copyOf = (files: ParquetFile[], path = 'p.parquet'): PersonCopy => ({ ...files[0]!, path, sources: files.map((f) => f.path) });

describe('dueCopies', () => {
  const policy = { enabled: true, minAgeMs: 10 * MIN };
  const old = NOW - DAY;

  test('settled team-days without a copy of exactly their files, newest day first', () => {
    const files = [
      file('1/2024-01-07/a', '2024-01-07', old),
      file('1/2024-01-08/a', '2024-01-08', old),
      file('1/2024-01-08/b', '2024-01-08', old),
      file('2/2024-01-08/a', '2024-01-08', old, 2),
      // Today has not ended; yesterday ended at midnight, 12 h ago, but its newest file is 5 min old.
      file('1/2024-01-10/a', '2024-01-10', old),
      file('1/2024-01-09/a', '2024-01-09', old),
      file('1/2024-01-09/b', '2024-01-09', NOW - 5 * MIN),
    ];
    const jobs = dueCopies(files, [], policy, NOW);
    expect(jobs.map((j) => [j.teamId, j.day, j.files.map((f) => f.path), j.replaces])).toEqual([
      [1, '2024-01-08', ['1/2024-01-08/a', '1/2024-01-08/b'], null],
      [2, '2024-01-08', ['2/2024-01-08/a'], null],
      [1, '2024-01-07', ['1/2024-01-07/a'], null],
    ]);
    // A day that ended only 5 minutes ago is not settled either.
    expect(dueCopies([file('1/2024-01-09/a', '2024-01-09', old)], [], policy, Date.parse('2024-01-10T00:05:00Z'))).toEqual([]);
    expect(dueCopies(files, [], { ...policy, enabled: false }, NOW)).toEqual([]);
  });

  test('a copy of exactly the day\'s files is kept; one of fewer or other files is replaced', () => {
    const a = file('1/2024-01-08/a', '2024-01-08', old);
    const b = file('1/2024-01-08/b', '2024-01-08', old);
    const current = copyOf([b, a]);
    expect(dueCopies([a, b], [current], policy, NOW)).toEqual([]);
    const partial = copyOf([a]);
    expect(dueCopies([a, b], [partial], policy, NOW)).toEqual([{ teamId: 1, day: '2024-01-08', files: [a, b], replaces: partial }]);
    const stale = copyOf([a, file('1/2024-01-08/gone', '2024-01-08', old)]);
    expect(dueCopies([a, b], [stale], policy, NOW)[0]?.replaces).toBe(stale);
  });
});

describe('usableCopies', () => {
  test('a copy stands in for its sources only while every source is registered', () => {
    const [a, b, c] = ['a', 'b', 'c'].map((p) => file(p, '2024-01-08', 0)) as [ParquetFile, ParquetFile, ParquetFile];
    const ab = copyOf([a, b], 'ab');
    expect(usableCopies([a, b, c], [ab])).toEqual([ab]);
    // `b` merged away: the copy is stale, every file is read.
    expect(usableCopies([a, c], [ab])).toEqual([]);
    expect(usableCopies([a, b], [])).toEqual([]);
  });
});

const copyRoot = (hh: Harness) => join(hh.dir, 'events', 'by-person');
async function copyFiles(hh: Harness): Promise<string[]> {
  const entries = await readdir(copyRoot(hh), { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name)).sort();
}

/** Rows of three people over two days, in an order unlike the copy's. */
const rowsOf = (from: number, count: number, teamId = 1) =>
  Array.from({ length: count }, (_, i) => makeEvent(from + i, { teamId, distinctId: `p${(from + i) % 3}`, timestamp: Date.UTC(2024, 0, 1) + ((i * 7_919_000) % (2 * DAY)) }));

async function personRows(hh: Harness, distinctId: string, byPerson: boolean) {
  const rel = await hh.store.eventsRelation(1, {}, { byPerson });
  const rows = await hh.db.query<{ uuid: string; ts: Date }>(`SELECT uuid, timestamp AS ts FROM ${rel.sql} AS events WHERE distinct_id = ? ORDER BY timestamp DESC, uuid`, [distinctId]);
  return { sql: rel.sql, uuids: rows.map((r) => r.uuid) };
}

describe('person copies in the store', () => {
  test('a copy holds exactly its day\'s rows sorted by person then newest first, and person relations read it in place of its files', async () => {
    h = await openHarness();
    await h.store.append(rowsOf(0, 300));
    await h.store.append(rowsOf(1000, 20, 2));
    await h.store.compact();
    const primary = await personRows(h, 'p1', false);
    expect(primary.uuids.length).toBe(100);
    expect(await h.store.buildPersonCopies()).toBe(4); // two days, two teams
    expect(h.store.stats().personCopies).toBe(4);
    expect(await h.store.buildPersonCopies()).toBe(0);
    const files = await copyFiles(h);
    expect(files.map((f) => f.slice(copyRoot(h!).length + 1).replace(/p\d+-\d+/, 'p*'))).toEqual(['1/2024-01-01/p*.parquet', '1/2024-01-02/p*.parquet', '2/2024-01-01/p*.parquet', '2/2024-01-02/p*.parquet']);
    const day1 = files[0]!;
    const inCopy = await h.db.query<{ d: string; t: Date; uuid: string }>(`SELECT distinct_id AS d, timestamp AS t, uuid FROM read_parquet('${day1}')`);
    const expected = await h.db.query<{ d: string; t: Date; uuid: string }>(
      `SELECT distinct_id AS d, timestamp AS t, uuid FROM ${(await h.store.eventsRelation(1)).sql} AS events WHERE timestamp < '2024-01-02' ORDER BY distinct_id, timestamp DESC`,
    );
    expect(inCopy.map((r) => r.uuid).sort()).toEqual(expected.map((r) => r.uuid).sort());
    expect(inCopy.map((r) => [r.d, r.t.getTime()])).toEqual(expected.map((r) => [r.d, r.t.getTime()]));
    const copied = await personRows(h, 'p1', true);
    expect(copied.uuids).toEqual(primary.uuids);
    expect(copied.sql).toContain('by-person');
    expect(copied.sql).not.toMatch(/parquet\/1\/2024-01-01/);
    // Only person relations read copies.
    expect((await h.store.eventsRelation(1)).sql).not.toContain('by-person');
    // Kept across a reopen; a copy file the manifest does not know is removed.
    const stray = join(copyRoot(h), '1', '2024-01-01', 'p0-999.parquet');
    await writeFile(stray, 'junk');
    await h.reopen();
    expect(await copyFiles(h)).toEqual(files);
    expect((await personRows(h, 'p1', true)).sql).toContain('by-person');
    expect(await h.store.buildPersonCopies()).toBe(0);
  });

  test('a late file is read beside the copy until the day is copied again; a merge makes the copy stale', async () => {
    h = await openHarness();
    await h.store.append(rowsOf(0, 300));
    await h.store.compact();
    await h.store.buildPersonCopies();
    const [before] = await copyFiles(h);
    // A late event of p1 on the first day: a new file, not among the copy's sources.
    await h.store.append([makeEvent(5000, { distinctId: 'p1', timestamp: Date.UTC(2024, 0, 1, 23, 59) })]);
    await h.store.flush();
    await h.store.compact(); // the day's two files merge into one: the copy is stale
    const primary = await personRows(h, 'p1', false);
    expect(primary.uuids.length).toBe(101);
    expect(primary.uuids).toContain(makeEvent(5000).uuid);
    const stale = await personRows(h, 'p1', true);
    expect(stale.uuids).toEqual(primary.uuids);
    expect(stale.sql).not.toContain(before!);
    expect(await h.store.buildPersonCopies()).toBe(1);
    const fresh = await personRows(h, 'p1', true);
    expect(fresh.uuids).toEqual(primary.uuids);
    expect(fresh.sql.match(/by-person/g)?.length).toBe(2);
  });

  test('a day with a new file beside its copied ones reads the copy and the new file', async () => {
    // Loads straight to Parquet, and no merges: the late row gets a file of its own.
    h = await openHarness({ directMinRows: 1 });
    await h.store.append(rowsOf(0, 300));
    await h.store.flush();
    await h.store.buildPersonCopies();
    await h.store.append([makeEvent(5000, { distinctId: 'p1', timestamp: Date.UTC(2024, 0, 1, 23, 59) })]);
    await h.store.flush();
    const primary = await personRows(h, 'p1', false);
    const mixed = await personRows(h, 'p1', true);
    expect(mixed.uuids).toEqual(primary.uuids);
    expect(mixed.uuids).toContain(makeEvent(5000).uuid);
    expect(mixed.sql.match(/by-person/g)?.length).toBe(2);
    expect(mixed.sql.match(/parquet\/1\/2024-01-01\//g)?.length).toBe(1);
  });

  test('the background writes copies once days have settled; deleting a project deletes its copies', async () => {
    const clock = testClock();
    h = await openHarness({ now: clock.now });
    const hh = h;
    await h.store.append(rowsOf(0, 60));
    await h.store.compact();
    clock.advance(10 * 60_000); // the files settle (personCopyMinAgeMs)
    await until(() => hh.store.stats().personCopies === 1);
    clock.advance(1_000); // copies are spaced out like the listing's batches
    await until(() => hh.store.stats().personCopies === 2);
    expect(h.store.stats().personCopies).toBe(2);
    expect((await copyFiles(h)).length).toBe(2);
    await h.store.deleteTeamEvents(1);
    await mkdir(copyRoot(h), { recursive: true });
    expect(await copyFiles(h)).toEqual([]);
    expect(await h.db.query('SELECT * FROM event_person_files')).toEqual([]);
    expect((await personRows(h, 'p1', true)).uuids).toEqual([]);
  });

  test('switched off, no copy is written, and copies written before are not read', async () => {
    h = await openHarness();
    await h.store.append(rowsOf(0, 60));
    await h.store.compact();
    expect(await h.store.buildPersonCopies()).toBe(2);
    expect((await personRows(h, 'p1', true)).sql).toContain('by-person');
    await h.reopen({ personCopies: false });
    const off = await personRows(h, 'p1', true);
    expect(off.sql).not.toContain('by-person');
    expect(off.uuids).toEqual((await personRows(h, 'p1', false)).uuids);
    await h.store.append(rowsOf(100, 60).map((r) => ({ ...r, timestamp: r.timestamp + 5 * DAY })));
    await h.store.compact();
    expect(await h.store.buildPersonCopies()).toBe(0);
  });
});
