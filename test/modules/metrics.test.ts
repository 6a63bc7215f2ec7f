import { afterEach, describe, expect, test } from 'bun:test';
import { createLogger } from '../../src/logger';
import { parseExposition } from '../helpers/prometheus';
import { createTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

/** Requests are counted in the turn after their answer (Elysia's after-response hook). */
const settled = () => new Promise((resolve) => setImmediate(resolve));

const scrape = async (app: TestApp) => {
  await settled();
  const res = await app.call('GET', '/metrics', { key: null });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
  return parseExposition(await res.text());
};

const UUID = '0190a0b0-0000-7000-8000-000000000001';

describe('GET /metrics', () => {
  test('is Prometheus text without authentication, and its figures move as events are captured, stored, dropped and queried', async () => {
    t = await createTestApp();
    const before = await scrape(t);
    expect(before.value('hogbase_ingest_events_acknowledged_total')).toBe(0);
    expect(before.value('hogbase_ingest_events_stored_total')).toBe(0);
    for (const reason of ['missing_event_name', 'missing_distinct_id', 'invalid_properties', 'duplicate']) {
      expect(before.value('hogbase_ingest_events_dropped_total', { reason })).toBe(0);
    }
    expect(before.value('hogbase_ingest_accepting')).toBe(1);
    expect([before.value('hogbase_capture_body_bytes_in_hand'), before.value('hogbase_capture_bodies_waiting'), before.value('hogbase_capture_bodies_refused_total')]).toEqual([0, 0, 0]);
    expect(before.value('hogbase_query_duration_seconds_count')).toBe(0);
    expect(before.value('hogbase_storage_work_duration_seconds_count', { work: 'load' })).toBe(0);
    expect(before.value('process_resident_memory_bytes')).toBeGreaterThan(0);
    expect(before.value('hogbase_js_heap_bytes')).toBeGreaterThan(0);
    expect(before.value('hogbase_js_external_bytes')).toBeGreaterThanOrEqual(0);
    expect(before.value('hogbase_js_forced_collections_total')).toBe(0);
    expect(before.value('hogbase_storage_memory_bytes')).toBeGreaterThanOrEqual(0);
    // The default cap, read back from the store (DuckDB shows it as "488.2 MiB"): 512 MB to its precision.
    expect(Math.abs(before.value('hogbase_storage_memory_limit_bytes') - 512e6)).toBeLessThan(0.1 * 2 ** 20);
    expect(before.value('hogbase_build_info', { version: 'test' })).toBe(1);

    const token = t.account.project.apiToken;
    const batch = [
      { event: 'a', distinct_id: 'u1', uuid: UUID },
      { event: 'b', distinct_id: 'u2' },
      { event: 'c', distinct_id: 'u3' },
      { distinct_id: 'u4' },
      { event: 'no id' },
    ];
    expect((await t.call('POST', '/batch/', { key: null, body: { api_key: token, batch } })).status).toBe(200);
    // A client retry of a stored event: acknowledged again, stored once.
    expect((await t.call('POST', '/e/', { key: null, body: { api_key: token, event: 'a', distinct_id: 'u1', uuid: UUID } })).status).toBe(200);
    await t.deps.storage.events.flush();
    const listed = await t.json('GET', `/api/projects/${t.account.project.id}/events/`);
    expect(listed.body.results).toHaveLength(3);
    await t.deps.storage.events.compact();

    const after = await scrape(t);
    expect(after.value('hogbase_ingest_events_acknowledged_total')).toBe(6);
    expect(after.value('hogbase_ingest_events_stored_total')).toBe(3);
    expect(after.value('hogbase_ingest_events_dropped_total', { reason: 'missing_event_name' })).toBe(1);
    expect(after.value('hogbase_ingest_events_dropped_total', { reason: 'missing_distinct_id' })).toBe(1);
    expect(after.value('hogbase_ingest_events_dropped_total', { reason: 'invalid_properties' })).toBe(0);
    expect(after.value('hogbase_ingest_events_dropped_total', { reason: 'duplicate' })).toBe(1);
    expect(after.value('hogbase_http_requests_total', { method: 'POST', route: '/batch/', status: '200' })).toBe(1);
    expect(after.value('hogbase_http_requests_total', { method: 'POST', route: '/e/', status: '200' })).toBe(1);
    expect(after.value('hogbase_http_requests_total', { method: 'GET', route: '/metrics', status: '200' })).toBe(1);
    expect(after.value('hogbase_http_requests_total', { method: 'GET', route: '/api/projects/:project_id/events/', status: '200' })).toBe(1);
    expect(after.value('hogbase_query_duration_seconds_count')).toBeGreaterThan(0);
    expect(after.value('hogbase_storage_work_duration_seconds_count', { work: 'load' })).toBeGreaterThan(0);
    expect(after.value('hogbase_storage_work_duration_seconds_count', { work: 'compaction' })).toBe(1);
    expect(after.value('hogbase_storage_work_duration_seconds_bucket', { work: 'compaction', le: '+Inf' })).toBe(1);
    // Everything acknowledged is stored and compacted: nothing waits, the rows are in Parquet.
    expect(after.value('hogbase_log_backlog_events')).toBe(0);
    expect(after.value('hogbase_log_backlog_bytes')).toBe(0);
    expect(after.value('hogbase_log_backlog_oldest_age_seconds')).toBe(0);
    expect(after.value('hogbase_hot_rows')).toBe(0);
    expect(after.value('hogbase_parquet_files')).toBe(1);
    expect(after.value('hogbase_parquet_rows')).toBe(3);
    expect(after.value('hogbase_parquet_bytes')).toBeGreaterThan(0);
    expect(after.value('hogbase_dead_letters')).toBe(0);
    expect(after.value('hogbase_storage_dedupe_files_read_total')).toBe(t.deps.storage.events.stats().priorFilesRead);
    // The store's memory by what holds it: the kinds it holds now, adding up to the total.
    const kinds = after.samples.filter((s) => s.name === 'hogbase_storage_memory_kind_bytes');
    expect(kinds.length).toBeGreaterThan(0);
    for (const k of kinds) {
      expect(k.labels.kind).toMatch(/^[a-z_]+$/);
      expect(k.value).toBeGreaterThan(0);
    }
    expect(kinds.reduce((n, k) => n + k.value, 0)).toBe(after.value('hogbase_storage_memory_bytes'));
    // Unknown paths share one label, so they cannot grow the series.
    await t.call('GET', '/no/such/path', { key: null });
    await t.call('GET', '/another/one', { key: null });
    expect((await scrape(t)).value('hogbase_http_requests_total', { route: 'unmatched', status: '404' })).toBe(2);
  });

  test('METRICS=off: no such route', async () => {
    t = await createTestApp({ METRICS: 'off' });
    expect((await t.call('GET', '/metrics', { key: null })).status).toBe(404);
  });

  test('backpressure shows: accepting 0 and the refused request counted, and /_ready answers 503 with the reason', async () => {
    // A free-disk reserve no disk has: ingestion refuses at once.
    t = await createTestApp({ MIN_FREE_DISK_MB: '1048576' });
    const token = t.account.project.apiToken;
    expect((await t.call('POST', '/e/', { key: null, body: { api_key: token, event: 'x', distinct_id: 'u' } })).status).toBe(503);
    const m = await scrape(t);
    expect(m.value('hogbase_ingest_accepting')).toBe(0);
    expect(m.value('hogbase_ingest_requests_refused_total')).toBe(1);
    expect(m.value('hogbase_http_requests_total', { method: 'POST', route: '/e/', status: '503' })).toBe(1);
    const ready = await t.json('GET', '/_ready', { key: null });
    expect(ready).toMatchObject({ status: 503, body: { accepting: false, reason: 'disk_low', backlog: { bytes: 0, events: 0, oldest_age_seconds: 0 } } });
    expect((await t.call('GET', '/_health', { key: null })).status).toBe(200);
  });
});

describe('GET /_ready', () => {
  test('200 while ingestion accepts, with the backlog: what waits to be stored, and for how long', async () => {
    t = await createTestApp();
    const token = t.account.project.apiToken;
    expect(await t.json('GET', '/_ready', { key: null })).toMatchObject({ status: 200, body: { accepting: true, reason: null, backlog: { bytes: 0, events: 0, oldest_age_seconds: 0 } } });
    expect((await t.call('POST', '/batch/', { key: null, body: { api_key: token, batch: [{ event: 'a', distinct_id: 'u1' }, { event: 'b', distinct_id: 'u1' }] } })).status).toBe(200);
    // Acknowledged, not yet stored: the log's open segment holds them until it is sealed.
    const waiting = await t.json('GET', '/_ready', { key: null });
    expect(waiting.status).toBe(200);
    expect(waiting.body.backlog.events).toBe(2);
    expect(waiting.body.backlog.bytes).toBeGreaterThan(0);
    expect(waiting.body.backlog.oldest_age_seconds).toBeGreaterThanOrEqual(0);
    await t.deps.storage.events.flush();
    expect((await t.json('GET', '/_ready', { key: null })).body).toEqual({ accepting: true, reason: null, backlog: { bytes: 0, events: 0, oldest_age_seconds: 0 } });
  });
});

describe('logs', () => {
  test('at debug level: every request, and background work with its counts and duration', async () => {
    const lines: Array<Record<string, unknown>> = [];
    t = await createTestApp({}, () => new Date(), createLogger('debug', (l) => lines.push(JSON.parse(l))));
    const token = t.account.project.apiToken;
    await t.call('POST', '/batch/?ver=1', { key: null, body: { api_key: token, batch: [{ event: 'a', distinct_id: 'u1' }, { event: 'b', distinct_id: 'u2' }] } });
    await t.deps.storage.events.flush();
    await t.deps.storage.events.compact();
    await settled();
    expect(lines.find((l) => l.msg === 'request')).toEqual({
      level: 'debug',
      time: expect.any(String),
      msg: 'request',
      method: 'POST',
      path: '/batch/',
      route: '/batch/',
      status: 200,
      ms: expect.any(Number),
    });
    expect(lines.find((l) => l.msg === 'event segments loaded')).toEqual({
      level: 'debug',
      time: expect.any(String),
      msg: 'event segments loaded',
      segments: 1,
      rows: 2,
      inserted: 2,
      duplicates: 0,
      bytes: expect.any(Number),
      parquetFiles: 0,
      ms: expect.any(Number),
    });
    expect(lines.find((l) => l.msg === 'hot rows compacted to Parquet')).toEqual({
      level: 'info',
      time: expect.any(String),
      msg: 'hot rows compacted to Parquet',
      rows: 2,
      files: 1,
      bytes: expect.any(Number),
      ms: expect.any(Number),
    });
  });
});
