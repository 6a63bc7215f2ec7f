import { afterEach, describe, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../src/storage/db';

let dir: string | null = null;
let db: Database | null = null;
afterEach(async () => {
  await db?.close();
  db = null;
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = null;
});

const taggedBytes = async (d: Database, tag: string): Promise<number> =>
  Number((await d.query<{ m: number }>('SELECT memory_usage_bytes AS m FROM duckdb_memory() WHERE tag = $1', [tag]))[0]?.m ?? 0);

describe('openDatabase', () => {
  test('reading Parquet files leaves no copy of their bytes in DuckDB (the OS page cache holds them outside the process)', async () => {
    dir = await mkdtemp(join(tmpdir(), 'hogbase-db-'));
    db = await openDatabase(join(dir, 'db.duckdb'));
    const file = join(dir, 'rows.parquet');
    await db.run(`COPY (SELECT i, md5(i::VARCHAR) || md5((i * 7)::VARCHAR) AS text FROM range(300000) t(i)) TO '${file}' (FORMAT parquet)`);
    for (let i = 0; i < 3; i++) {
      const [row] = await db.query<{ n: number; total: number }>(`SELECT count(*) AS n, sum(length(text)) AS total FROM read_parquet('${file}')`);
      expect(row).toEqual({ n: 300000, total: 300000 * 64 });
    }
    expect(await taggedBytes(db, 'EXTERNAL_FILE_CACHE')).toBe(0);
  });
});

describe('the footer cache', () => {
  test('no connection keeps the footers of the Parquet files it reads: not queries, a borrowed reader or the write connection', async () => {
    dir = await mkdtemp(join(tmpdir(), 'hogbase-db-'));
    db = await openDatabase(join(dir, 'db.duckdb'), { readers: 1 });
    const files = [0, 1, 2].map((n) => join(dir!, `f${n}.parquet`));
    for (const f of files) await db.run(`COPY (SELECT i, md5(i::VARCHAR) AS text FROM range(20000) t(i)) TO '${f}' (FORMAT parquet, ROW_GROUP_SIZE 1024)`);
    const count = `SELECT count(*) AS n FROM read_parquet($1)`;
    await db.withWriter(async (c) => {
      await c.run(`CREATE TABLE t AS SELECT * FROM read_parquet('${files[0]}')`);
    });
    expect(await db.query('SELECT count(*) AS n FROM t')).toEqual([{ n: 20000 }]);
    expect(await db.query(count, [files[1]!])).toEqual([{ n: 20000 }]);
    expect(await db.withReader(async (c) => (await c.runAndReadAll(count, [files[2]!])).getRowsJS()[0]![0])).toBe(20000n);
    // Each file read twice: a kept footer would show on the second read at the latest.
    expect(await db.query(count, [files[1]!])).toEqual([{ n: 20000 }]);
    expect(await taggedBytes(db, 'OBJECT_CACHE')).toBe(0);
  });
});

describe('queryChunks', () => {
  test('hands a large result over in chunks, in order, converted as query converts rows; the reader is free for the next query after it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'hogbase-db-'));
    db = await openDatabase(join(dir, 'db.duckdb'), { readers: 1 });
    const chunks: Array<Array<{ i: number; t: string; at: Date }>> = [];
    await db.queryChunks<{ i: number; t: string; at: Date }>("SELECT i, 'row ' || i AS t, make_timestamp(i * 1000000) AS at FROM range(?) r(i) ORDER BY i", [5000], (rows) => chunks.push(rows));
    expect(chunks.length).toBeGreaterThan(1); // never the whole result at once
    const all = chunks.flat();
    expect(all.length).toBe(5000);
    expect(all[4999]).toEqual({ i: 4999, t: 'row 4999', at: new Date(4_999_000) });
    expect(all.every((r, n) => r.i === n && typeof r.i === 'number')).toBe(true);
    expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });

  test('a failing query rejects, and the reader is given back', async () => {
    dir = await mkdtemp(join(tmpdir(), 'hogbase-db-'));
    db = await openDatabase(join(dir, 'db.duckdb'), { readers: 1 });
    await expect(db.queryChunks('SELECT * FROM no_such_table', [], () => undefined)).rejects.toThrow(/no_such_table/);
    expect(await db.query('SELECT 2 AS two')).toEqual([{ two: 2 }]);
  });
});

describe('queryChunks when it stops partway', () => {
  test('an error in the middle of the stream, or thrown by `each`, rejects the call, and the reader serves the next query', async () => {
    dir = await mkdtemp(join(tmpdir(), 'hogbase-db-'));
    db = await openDatabase(join(dir, 'db.duckdb'), { readers: 1 });
    const failing = "SELECT i, CASE WHEN i = 4500 THEN error('row 4500 is bad') ELSE i END AS v FROM range(5000) r(i)";
    await expect(db.queryChunks(failing, [], () => undefined)).rejects.toThrow(/row 4500 is bad/);
    expect(await db.query('SELECT 3 AS three')).toEqual([{ three: 3 }]);
    let chunks = 0;
    const stop = new Error('enough');
    await expect(
      db.queryChunks('SELECT i FROM range(10000) r(i)', [], () => {
        if (++chunks === 2) throw stop;
      }),
    ).rejects.toBe(stop);
    expect(chunks).toBe(2);
    expect(await db.query<{ n: number }>('SELECT count(*) AS n FROM range(7) r(i)')).toEqual([{ n: 7 }]);
  });
});
