import { afterEach, describe, expect, test } from 'bun:test';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Database } from '../../../../src/storage/db';
import { concatParquet } from '../../../../src/storage/events/tiers/parquet-concat';
import { PARQUET_WRITE_OPTIONS } from '../../../../src/storage/events/tiers/parquet-write';
import { openBareDatabase } from '../helpers';

let opened: Awaited<ReturnType<typeof openBareDatabase>> | null = null;
afterEach(async () => {
  await opened?.cleanup();
  opened = null;
});

const DAY = Date.UTC(2024, 4, 1);

/** A file as the store writes them (its options; rows newest first): `rows` events of `distinct` people, times below `top`. */
async function writeEvents(db: Database, path: string, rows: number, top: number, extra = ''): Promise<void> {
  await db.run(
    `COPY (SELECT uuid()::VARCHAR AS uuid, 1::INTEGER AS team_id, 'e' || (i % 5) AS event, 'p' || (i % 300) AS distinct_id, ` +
      `'{"n":' || i || ',"pad":"' || repeat('x', (i % 40)::INTEGER) || '"}' AS properties, make_timestamp((${top} - i * 1000)::BIGINT * 1000) AS timestamp, ` +
      `CASE WHEN i % 3 = 0 THEN NULL ELSE 'Chrome' END AS mat_browser${extra}, DATE '2024-05-01' AS _day FROM range(${rows}) t(i) ORDER BY timestamp DESC) ` +
      `TO '${path}' (FORMAT parquet, ${PARQUET_WRITE_OPTIONS()})`,
  );
}

/** Every row's values in the order of the files given (each in its own order). */
async function rowsInOrder(db: Database, paths: readonly string[]): Promise<string[]> {
  const list = `[${paths.map((p) => `'${p}'`).join(', ')}]`;
  const rows = await db.query<{ r: string }>(
    `SELECT concat_ws('|', uuid, team_id, event, distinct_id, properties, epoch_ms(timestamp), mat_browser, _day) AS r ` +
      `FROM read_parquet(${list}, filename = true, file_row_number = true) ORDER BY list_position(${list}, filename), file_row_number`,
  );
  return rows.map((r) => r.r);
}

interface Group {
  row_group_id: number;
  rows: number;
  sizes: string;
}

/** Each row group's rows and its columns' compressed sizes. */
async function rowGroups(db: Database, path: string): Promise<Group[]> {
  return db.query<Group>(
    `SELECT row_group_id, any_value(row_group_num_rows) AS rows, string_agg(total_compressed_size::VARCHAR, ',' ORDER BY column_id) AS sizes ` +
      `FROM parquet_metadata('${path}') GROUP BY row_group_id ORDER BY row_group_id`,
  );
}

/** Every position a file's footer holds (pages, dictionaries, Bloom filters), moved by `delta`. */
async function positions(db: Database, path: string, delta = 0): Promise<Array<Array<number | null>>> {
  const rows = await db.query<Record<string, number | null>>(
    `SELECT data_page_offset, dictionary_page_offset, bloom_filter_offset, file_offset FROM parquet_metadata('${path}') ORDER BY row_group_id, column_id`,
  );
  return rows.map((r) => [r.data_page_offset, r.dictionary_page_offset, r.bloom_filter_offset, r.file_offset].map((v) => (v === null || v === 0 ? v : Number(v) + delta)));
}

/** The bytes between a file's leading magic and its footer. */
async function bodyBytes(db: Database, path: string): Promise<number> {
  const [m] = await db.query<{ size: number; footer: number }>(`SELECT file_size_bytes AS size, footer_size AS footer FROM parquet_file_metadata('${path}')`);
  return Number(m!.size) - Number(m!.footer) - 8 - 4;
}

describe('concatParquet', () => {
  test("the files' row groups, byte for byte and in order, under one footer: rows, statistics and Bloom filters read as before", async () => {
    opened = await openBareDatabase();
    const { db, dir } = opened;
    const inputs = [join(dir, 'a.parquet'), join(dir, 'b.parquet'), join(dir, 'c.parquet')];
    await writeEvents(db, inputs[0] as string, 9_000, DAY + 80_000_000);
    await writeEvents(db, inputs[1] as string, 300, DAY + 60_000_000);
    await writeEvents(db, inputs[2] as string, 5_000, DAY + 50_000_000);
    const out = join(dir, 'joined.parquet');
    expect(await concatParquet(inputs, out)).toEqual({ rows: 14_300 });

    expect(await rowsInOrder(db, [out])).toEqual(await rowsInOrder(db, inputs));
    // The inputs' row groups (4,096 rows at most), each column's compressed bytes the same size: copied, not written again.
    const expected = (await Promise.all(inputs.map((p) => rowGroups(db, p)))).flat().map((g, i) => ({ ...g, row_group_id: i }));
    expect(expected.length).toBeGreaterThanOrEqual(5);
    expect(await rowGroups(db, out)).toEqual(expected);
    // Each input's positions moved by the bytes of the inputs before it.
    const moved: Array<Array<number | null>> = [];
    let delta = 0;
    for (const p of inputs) {
      moved.push(...(await positions(db, p, delta)));
      delta += await bodyBytes(db, p);
    }
    expect(await positions(db, out)).toEqual(moved);
    const [meta] = await db.query<{ num_rows: number; num_row_groups: number }>(`SELECT num_rows, num_row_groups FROM parquet_file_metadata('${out}')`);
    expect(meta).toEqual({ num_rows: 14_300, num_row_groups: expected.length });

    // A uuid of the last file: each row group's Bloom filter answers for it as the input's did
    // (a filter may let a group through that lacks it: those are false positives, copied too),
    // and the group holding it (row 4,500: the file's second group) is never excluded.
    const [{ uuid }] = await db.query<{ uuid: string }>(`SELECT uuid FROM read_parquet('${inputs[2]}', file_row_number = true) WHERE file_row_number = 4500`);
    const probe = async (path: string) =>
      (await db.query<{ excludes: boolean }>(`SELECT bloom_filter_excludes AS excludes FROM parquet_bloom_probe('${path}', 'uuid', '${uuid}') ORDER BY row_group_id`)).map((p) => p.excludes);
    const inputProbes = (await Promise.all(inputs.map((p) => probe(p)))).flat();
    expect(inputProbes.filter((excludes) => excludes).length).toBeGreaterThan(0);
    expect(inputProbes[inputProbes.length - 1]).toBe(false);
    expect(await probe(out)).toEqual(inputProbes);
    expect(await db.query(`SELECT epoch_ms(timestamp) AS ms FROM read_parquet('${out}') WHERE uuid = ?`, [uuid])).toEqual([{ ms: DAY + 50_000_000 - 4500 * 1000 }]);
    // Statistics moved with their row groups: a time filter keeps its groups.
    const [{ n }] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM read_parquet('${out}') WHERE timestamp >= make_timestamp(${DAY + 60_000_000 - 299_000}::BIGINT * 1000) AND timestamp <= make_timestamp(${DAY + 60_000_000}::BIGINT * 1000)`);
    expect(n).toBe(300);
  });

  test('files it cannot join exactly: null, and nothing written', async () => {
    opened = await openBareDatabase();
    const { db, dir } = opened;
    const plain = join(dir, 'plain.parquet');
    const wider = join(dir, 'wider.parquet');
    const text = join(dir, 'text.parquet');
    await writeEvents(db, plain, 100, DAY + 10_000_000);
    await writeEvents(db, wider, 100, DAY + 20_000_000, `, 'x' AS mat_os`);
    writeFileSync(text, 'PAR1 not really PAR1');
    const out = join(dir, 'out.parquet');
    expect(await concatParquet([plain, wider], out)).toBeNull();
    expect(await concatParquet([plain, text], out)).toBeNull();
    expect(existsSync(out)).toBe(false);
    expect(await concatParquet([plain], out)).toEqual({ rows: 100 });
    expect(await rowsInOrder(db, [out])).toEqual(await rowsInOrder(db, [plain]));
  });
});
