import { afterEach, describe, expect, test } from 'bun:test';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Database } from '../../../../src/storage/db';
import { writeParquet } from '../../../../src/storage/events/tiers/parquet-write';
import { openBareDatabase } from '../helpers';

let opened: Awaited<ReturnType<typeof openBareDatabase>> | null = null;
afterEach(async () => {
  await opened?.cleanup();
  opened = null;
});

const DAY = Date.UTC(2024, 4, 1);

/** Each file's event times in the order the file holds its rows. */
async function timesInFileOrder(d: Database, path: string): Promise<number[]> {
  const rows = await d.query<{ ms: number }>(`SELECT epoch_ms(timestamp) AS ms FROM read_parquet('${path}', file_row_number = true) ORDER BY file_row_number`);
  return rows.map((r) => r.ms);
}

describe('writeParquet', () => {
  // DuckDB's partitioned COPY writes each thread's rows as they come, so with several threads a
  // partition's file held the ORDER BY in runs (duckdb/duckdb#14349); the exports' ordered scans
  // read a file registered as sorted without sorting it.
  test('every file it writes holds its rows newest first, whatever the threads, and nothing else changes', async () => {
    opened = await openBareDatabase({ threads: 4 });
    const { db, dir } = opened;
    // Each thread's rows written every 1,024 (16,384 in production): runs whatever the scheduling.
    await db.run('SET partitioned_write_flush_threshold = 1024');
    const n = 90_000;
    // Times scattered over one day for project 1 and two days for project 2, ordered as a load orders them.
    const select =
      `SELECT 'u' || i AS uuid, (1 + i % 2)::INTEGER AS team_id, '{"n":' || i || '}' AS properties, ` +
      `make_timestamp((${DAY} + (hash(i) % (CASE WHEN i % 2 = 0 THEN 86400000 ELSE 172800000 END)))::BIGINT * 1000) AS timestamp, ` +
      `CAST(timestamp AS DATE) AS _day FROM range(${n}) AS t(i) ORDER BY team_id, timestamp DESC`;
    const root = join(dir, 'parquet');
    const files = await db.withWriter((c) => writeParquet(c, root, select, 'w1', () => 1_000));
    expect(files.map((f) => `${f.teamId}/${f.day}`).sort()).toEqual(['1/2024-05-01', '2/2024-05-01', '2/2024-05-02']);
    let rows = 0;
    for (const f of files) {
      const times = await timesInFileOrder(db, join(root, f.path));
      expect(times.length).toBe(f.rows);
      expect(times).toEqual([...times].sort((a, b) => b - a));
      expect([f.minTs, f.maxTs]).toEqual([times[times.length - 1], times[0]]);
      rows += f.rows;
    }
    expect(rows).toBe(n);
    // The same rows as the query gave, no more, no fewer.
    const [written] = await db.query<{ rows: number; uuids: number; sum: number }>(
      `SELECT count(*) AS rows, count(DISTINCT uuid) AS uuids, sum(json_extract(properties, '$.n')::BIGINT) AS sum FROM read_parquet('${root}/*/*/*.parquet')`,
    );
    expect(written).toEqual({ rows: n, uuids: n, sum: (n * (n - 1)) / 2 });
  });

  /** `n` rows ordered as a load orders them: project 1 over `days1` days from DAY, project 2 (when `two`) over two. */
  const rowsSelect = (n: number, two: boolean, days1 = 1) =>
    `SELECT 'u' || i AS uuid, (CASE WHEN ${two} THEN 1 + i % 2 ELSE 1 END)::INTEGER AS team_id, '{"n":' || i || '}' AS properties, ` +
    `make_timestamp((${DAY} + (hash(i) % (CASE WHEN team_id = 1 THEN ${days1 * 86_400_000} ELSE 172800000 END)))::BIGINT * 1000) AS timestamp, ` +
    `CAST(timestamp AS DATE) AS _day FROM range(${n}) AS t(i) ORDER BY team_id, timestamp DESC`;

  /** Every file under `root`, relative to it. */
  const filesUnder = (root: string): string[] => (readdirSync(root, { recursive: true, withFileTypes: true }) as Array<{ isFile(): boolean; parentPath: string; name: string }>)
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath, e.name)))
    .sort();

  /** The connection, with every statement it is given (a method's text argument) kept in `statements`. */
  const recording = (c: DuckDBConnection, statements: string[]): DuckDBConnection =>
    new Proxy(c, {
      get(target, prop) {
        const value = Reflect.get(target, prop);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (typeof args[0] === 'string') statements.push(args[0]);
          return value.apply(target, args);
        };
      },
    });
  const partitioned = (statements: string[]) => statements.filter((s) => /PARTITION_BY/.test(s)).length;

  test('rows of the one team-day the caller expects go in one file, newest first, under that team-day, without the partitioned write', async () => {
    opened = await openBareDatabase({ threads: 4 });
    const { db, dir } = opened;
    await db.run('SET partitioned_write_flush_threshold = 1024');
    const n = 40_000;
    const root = join(dir, 'parquet');
    const statements: string[] = [];
    const files = await db.withWriter((c) => writeParquet(recording(c, statements), root, rowsSelect(n, false), 'w2', () => 1_000, { teamId: 1, day: '2024-05-01' }));
    expect(partitioned(statements)).toBe(0);
    expect(files).toHaveLength(1);
    const [f] = files;
    expect({ teamId: f.teamId, day: f.day, rows: f.rows, createdAt: f.createdAt }).toEqual({ teamId: 1, day: '2024-05-01', rows: n, createdAt: 1_000 });
    expect(filesUnder(root)).toEqual([f.path]);
    const times = await timesInFileOrder(db, join(root, f.path));
    expect(times).toEqual([...times].sort((a, b) => b - a));
    expect([f.minTs, f.maxTs]).toEqual([times[times.length - 1], times[0]]);
    const [written] = await db.query<{ rows: number; sum: number; teams: number }>(
      `SELECT count(*) AS rows, sum(json_extract(properties, '$.n')::BIGINT) AS sum, count(DISTINCT team_id) AS teams FROM read_parquet('${join(root, f.path)}')`,
    );
    expect(written).toEqual({ rows: n, sum: (n * (n - 1)) / 2, teams: 1 });
  });

  // The caller's expectation comes from processing; a row of another team-day must still land in its own partition.
  test.each([
    ['another project', true, 1],
    ['another day', false, 2],
  ])('rows of %s than the one expected are written partitioned after all, and the one file tried is gone', async (_, two, days1) => {
    opened = await openBareDatabase({ threads: 2 });
    const { db, dir } = opened;
    const n = 20_000;
    const root = join(dir, 'parquet');
    const statements: string[] = [];
    const files = await db.withWriter((c) =>
      writeParquet(recording(c, statements), root, rowsSelect(n, two as boolean, days1 as number), 'w3', () => 1_000, { teamId: 1, day: '2024-05-01' }),
    );
    expect(partitioned(statements)).toBe(1);
    const expected = two ? ['1/2024-05-01', '2/2024-05-01', '2/2024-05-02'] : ['1/2024-05-01', '1/2024-05-02'];
    expect(files.map((f) => `${f.teamId}/${f.day}`).sort()).toEqual(expected);
    expect(filesUnder(root)).toEqual(files.map((f) => f.path).sort());
    for (const f of files) {
      const [inFile] = await db.query<{ rows: number; teams: number; days: number; day: string }>(
        `SELECT count(*) AS rows, count(DISTINCT team_id) AS teams, count(DISTINCT CAST(timestamp AS DATE)) AS days, strftime(min(timestamp), '%Y-%m-%d') AS day, min(team_id) AS team FROM read_parquet('${join(root, f.path)}')`,
      );
      expect(inFile).toEqual({ rows: f.rows, teams: 1, days: 1, day: f.day, team: f.teamId } as never);
    }
    expect(files.reduce((a, f) => a + f.rows, 0)).toBe(n);
  });
});
