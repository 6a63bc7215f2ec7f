import { expect } from 'bun:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A Parquet body read back with DuckDB, as an analyst's tool would open it: its rows (as JS
 * values) and its columns' names and types. A file with rows must be zstd-compressed.
 */
export async function readParquet(bytes: Uint8Array, select = '*'): Promise<{ rows: Array<Record<string, unknown>>; columns: Array<{ name: string; type: string }> }> {
  const file = join(tmpdir(), `export-test-${crypto.randomUUID()}.parquet`);
  await Bun.write(file, bytes);
  const instance = await DuckDBInstance.create(':memory:');
  const c = await instance.connect();
  try {
    const rows = (await c.runAndReadAll(`SELECT ${select} FROM read_parquet('${file}')`)).getRowObjectsJS() as Array<Record<string, unknown>>;
    const described = (await c.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet('${file}')`)).getRowObjectsJS() as Array<{ column_name: string; column_type: string }>;
    const codecs = (await c.runAndReadAll(`SELECT DISTINCT compression FROM parquet_metadata('${file}')`)).getRowObjectsJS() as Array<{ compression: string }>;
    if (rows.length) expect(codecs.map((r) => r.compression)).toEqual(['ZSTD']);
    return { rows, columns: described.map((d) => ({ name: d.column_name, type: d.column_type })) };
  } finally {
    c.closeSync();
    instance.closeSync();
    await rm(file, { force: true });
  }
}
