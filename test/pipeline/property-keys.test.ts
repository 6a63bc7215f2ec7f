import { afterEach, describe, expect, test } from 'bun:test';
import { rm } from 'node:fs/promises';
import { DuckDBInstance } from '@duckdb/node-api';
import { createTestApp, reopenTestApp, type TestApp } from '../helpers/test-app';

/**
 * The property keys of the Parquet files a load writes come from processing (each request's
 * rows' keys by day), not from a pass over the files' rows: registered with the files, exactly
 * as DuckDB's `json_keys` lists them. The store's clock stands still here, so the background
 * listing (spaced by that clock) never runs: what the files report, the load registered.
 */
let t: TestApp | null = null;
afterEach(async () => {
  if (!t) return;
  await t.close();
  await rm(t.dataDir, { recursive: true, force: true });
  t = null;
});

const DAY = 86_400_000;
const at = (day: number, s: number) => new Date(Date.UTC(2024, 2, 1) + day * DAY + s * 1000).toISOString();

/** Each registered file's day, its keys as reported, and its keys as a scan of its rows lists them. */
async function keysOf(app: TestApp) {
  const scan = await (await DuckDBInstance.create(':memory:')).connect();
  const rel = await app.deps.storage.events.eventsRelation(1);
  const out: Array<{ day: string; reported: readonly string[] | undefined; scanned: string[] }> = [];
  for (const f of rel.files) {
    const rows = (await scan.runAndReadAll(`SELECT DISTINCT unnest(json_keys(properties)) AS k FROM read_parquet('${f.id}') ORDER BY k`)).getRowsJS();
    const day = String((await scan.runAndReadAll(`SELECT strftime(min(timestamp), '%Y-%m-%d') FROM read_parquet('${f.id}')`)).getRowsJS()[0][0]);
    out.push({ day, reported: f.propertyKeys, scanned: rows.map((r) => String(r[0])) });
  }
  scan.closeSync();
  return out.sort((a, b) => a.day.localeCompare(b.day));
}

describe('property keys from processing', () => {
  test('a load registers each file\'s keys as processing saw them, per day, also across days within one request; they survive a restart', async () => {
    const still = new Date(Date.UTC(2024, 2, 3));
    t = await createTestApp({}, () => still, undefined, { directMinRows: 1 });
    const batch = [
      { event: 'e', distinct_id: 'u1', timestamp: at(0, 1), properties: { a: 1, common: 'x' } },
      { event: 'e', distinct_id: 'u2', timestamp: at(1, 1), properties: { b: 1, common: 'y', 'q"uote,d': true } },
      { event: 'e', distinct_id: 'u1', timestamp: at(0, 2), properties: { c: null, $set: { plan: 'pro' } } },
      { event: 'e', distinct_id: 'u3', timestamp: at(1, 2), properties: { ['lone\udc00']: 1 } },
    ];
    expect((await t.call('POST', '/batch/', { key: null, body: { api_key: t.account.project.apiToken, batch } })).status).toBe(200);
    expect((await t.call('POST', '/capture/', { key: null, body: { api_key: t.account.project.apiToken, event: 'e', distinct_id: 'u4', timestamp: at(1, 3), properties: { d: [1] } } })).status).toBe(200);
    await t.deps.storage.events.flush();
    const files = await keysOf(t);
    expect(files.map((f) => f.day)).toEqual(['2024-03-01', '2024-03-02']);
    for (const f of files) expect(f.reported).toEqual(f.scanned);
    expect(files[0].reported).toContain('a');
    expect(files[0].reported).not.toContain('b');
    expect(files[1].reported).toEqual(expect.arrayContaining(['b', 'd', 'lone\ufffd', 'q"uote,d']));
    expect(files[1].reported).not.toContain('a');
    t = await reopenTestApp(t, {}, () => still);
    for (const f of await keysOf(t)) expect(f.reported).toEqual(f.scanned);
  });

  test('a fractional epoch-ms timestamp just before midnight: its row and its keys fall on the day it is stored in, and it is stored', async () => {
    const still = new Date(Date.UTC(2024, 2, 3));
    t = await createTestApp({}, () => still, undefined, { directMinRows: 1 });
    const midnight = Date.UTC(2024, 2, 2);
    const batch = [
      { event: 'e', distinct_id: 'u1', timestamp: at(0, 5), properties: { a: 1 } },
      // Rounds to March 2, 00:00:00.000: the day its keys are filed under must be the same.
      { event: 'e', distinct_id: 'u2', timestamp: midnight - 0.4, properties: { b: 1 } },
      { event: 'e', distinct_id: 'u3', timestamp: at(1, 5), properties: { c: 1 } },
    ];
    expect((await t.call('POST', '/batch/', { key: null, body: { api_key: t.account.project.apiToken, batch } })).status).toBe(200);
    await t.deps.storage.events.flush();
    const files = await keysOf(t);
    expect(files.map((f) => f.day)).toEqual(['2024-03-01', '2024-03-02']);
    for (const f of files) expect(f.reported).toEqual(f.scanned);
    expect(files[1].scanned).toContain('b');
    expect((await t.json('GET', '/api/projects/1/events/?distinct_id=u2')).body.results.map((e: { timestamp: string }) => e.timestamp)).toEqual(['2024-03-02T00:00:00+00:00']);
  });
});
