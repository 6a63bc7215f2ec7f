import { afterEach, expect, test } from 'bun:test';
import { rm } from 'node:fs/promises';
import * as LZString from 'lz-string';
import { DuckDBInstance } from '@duckdb/node-api';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { listDeadLetters } from '../../src/storage/events';

/**
 * lz64 bodies decode to UTF-16 text, which may hold a raw lone surrogate (no `\u` escape): it is
 * stored as U+FFFD like an escaped one, so the load's rows (taken without a JSON check) stay JSON
 * DuckDB reads. (Found by review: such a row reached Parquet, and every property-filtered list of
 * the project then failed.)
 */
let t: TestApp | null = null;
afterEach(async () => {
  if (!t) return;
  await t.close();
  await rm(t.dataDir, { recursive: true, force: true });
  t = null;
});

const lz64 = (app: TestApp, events: unknown[]) => {
  // JSON.stringify escapes a lone surrogate: put it back raw, as a client's string holds it.
  const raw = JSON.stringify({ api_key: app.account.project.apiToken, batch: events }).replaceAll('\\ud800', '\ud800');
  expect(raw.includes('\\ud800')).toBe(false);
  return app.call('POST', '/batch/?compression=lz64', { key: null, body: `data=${encodeURIComponent(LZString.compressToBase64(raw))}`, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
};

test('an lz64 body with a raw lone surrogate: stored as U+FFFD in Parquet, filtered lists answer, nothing dead-lettered', async () => {
  t = await createTestApp({}, () => new Date(Date.UTC(2024, 2, 3)), undefined, { directMinRows: 1 });
  const res = await lz64(t, [
    { event: 'lz', distinct_id: 'u1', timestamp: '2024-03-01T00:00:01Z', properties: { text: 'a\ud800b', $set: { nick: '\ud800' } } },
    { event: 'ok', distinct_id: 'u1', timestamp: '2024-03-01T00:00:02Z', properties: { text: 'fine' } },
  ]);
  expect(res.status).toBe(200);
  await t.deps.storage.events.flush();
  expect(await listDeadLetters(t.dataDir)).toEqual([]);
  const rel = await t.deps.storage.events.eventsRelation(1);
  expect(rel.files.length).toBe(1);
  const scan = await (await DuckDBInstance.create(':memory:')).connect();
  try {
    const rows = (await scan.runAndReadAll(`SELECT json_extract_string(properties::JSON, '$.text') FROM read_parquet('${rel.files[0].id}') ORDER BY 1`)).getRowsJS();
    expect(rows).toEqual([['a\ufffdb'], ['fine']]);
  } finally {
    scan.closeSync();
  }
  const filter = encodeURIComponent(JSON.stringify([{ key: 'text', value: 'fine', operator: 'exact' }]));
  const listed = await t.json('GET', `/api/projects/1/events/?properties=${filter}`);
  expect({ status: listed.status, events: listed.body.results?.map((e: { event: string }) => e.event) }).toEqual({ status: 200, events: ['ok'] });
  await t.deps.storage.persons.flush();
  expect(t.deps.storage.persons.findByDistinctId(1, 'u1')!.properties.nick).toBe('\ufffd');
});
