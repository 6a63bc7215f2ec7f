import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createDataset } from './_dataset';
import { startProgress } from './_progress';
import { assertBenchTarget, countEvents, waitForCount, type ServerTarget } from './_target';
import { EVENTS_LIST_CASES, type DatasetSamples, type ExportSample, type HeadlineEnv } from './_headline-types';

/**
 * N generated events (`_dataset.ts`) posted as ~1 MB `/batch/` bodies, 4 in flight (acknowledged
 * and queryable events/s of the load); then the events list (each case timed after a warm-up),
 * csv and Parquet exports of every event of the project, and the disk they take.
 */

const IN_FLIGHT = 4;

export async function measureDataset(env: HeadlineEnv, dataDir: string | null): Promise<DatasetSamples> {
  const { target, options } = env;
  const dataset = createDataset(options.events, target.projectKey);
  env.sampler.setPhase('loading events');
  env.sampler.resetPeak();
  const load = await loadEvents(env, dataset.bodies(), options.events);
  const loadPeakMb = await env.sampler.peakMb();
  env.log(`loaded ${options.events.toLocaleString('en-US')} events in ${load.seconds.toFixed(1)} s, all queryable ${load.queryableS.toFixed(1)} s later; peak RSS ${loadPeakMb} MB`);

  env.sampler.setPhase('events list');
  const queries: Record<string, number[]> = {};
  const runs = Math.max(5, options.rounds * 2);
  for (const c of EVENTS_LIST_CASES) {
    const params = new URLSearchParams(Object.fromEntries(Object.entries(c.query).map(([k, v]) => [k, v.replace('{person}', dataset.person)])));
    const path = `/api/projects/${target.projectId}/events/?${params}`;
    const first = await timedGet(target, path);
    if (first.results === 0) env.problems.push(`events list "${c.name}" found no events`);
    queries[c.key] = [];
    for (let i = 0; i < runs; i++) queries[c.key].push((await timedGet(target, path)).ms);
    env.log(`events list ${c.name}: ${queries[c.key].map((ms) => ms.toFixed(0)).join(', ')} ms (${first.results} events on the page)`);
  }

  const stored = (await countEvents(target)) ?? options.events;
  const metrics = await parquetMetrics(target.url);
  const exports: DatasetSamples['exports'] = { csv: [], parquet: [] };
  for (const format of ['csv', 'parquet'] as const) {
    env.sampler.setPhase(`${format} export`);
    for (let round = 1; round <= Math.min(3, options.rounds); round++) {
      env.sampler.resetPeak();
      // A refused export (e.g. a 503 past DUCKDB_MEMORY_LIMIT) is a finding of the run, not its end.
      const sample = await exportOnce(env, format, stored, metrics.bytes, `${format} export round ${round}`).catch((error: unknown) => {
        env.problems.push(`${format} export of ${stored.toLocaleString('en-US')} events failed: ${error instanceof Error ? error.message : String(error)}`);
        env.log(`${format} export round ${round} failed: ${error instanceof Error ? error.message : String(error)}`);
        return null;
      });
      if (!sample) break;
      exports[format].push(sample);
      env.log(`${format} export round ${round}: ${sample.rows.toLocaleString('en-US')} rows, ${(sample.bytes / 1e6).toFixed(0)} MB in ${sample.seconds.toFixed(1)} s, peak RSS ${sample.peakMb} MB`);
    }
  }
  env.sampler.setPhase('disk');
  const after = await parquetMetrics(target.url);
  return {
    events: options.events,
    loadSeconds: load.seconds,
    queryableS: load.queryableS,
    loadPeakMb,
    queries,
    exports,
    diskBytes: dataDir ? await allocatedBytes(dataDir) : null,
    parquetBytes: after.bytes,
    parquetRows: after.rows,
  };
}

/** Posts the bodies, `IN_FLIGHT` at a time; a 503 (the store is full) is retried after its Retry-After. */
async function loadEvents(env: HeadlineEnv, bodies: Generator<{ body: Buffer; events: number }>, total: number) {
  const { target } = env;
  assertBenchTarget(target.url);
  const before = (await countEvents(target)) ?? 0;
  const started = performance.now();
  const deadline = started + Math.max(600, total / 1000) * 1000;
  const progress = startProgress(`loading ${total.toLocaleString('en-US')} events`, total, 'events');
  let acked = 0;
  const post = async (b: { body: Buffer; events: number }) => {
    for (let attempt = 1; ; attempt++) {
      if (performance.now() > deadline) throw new Error(`loading the events took longer than ${Math.round((deadline - started) / 1000)} s`);
      const response = await fetch(`${target.url}/batch/`, { method: 'POST', body: b.body, headers: { 'content-type': 'application/json' } }).catch(() => null);
      if (response?.status === 200) {
        await response.arrayBuffer();
        acked += b.events;
        progress.update(acked);
        return;
      }
      const retryAfter = Number(response?.headers.get('retry-after') ?? 1);
      const text = response ? await response.text() : 'no answer';
      if (response && response.status !== 503) throw new Error(`POST /batch/ answered ${response.status}: ${text.slice(0, 300)}`);
      if (attempt >= 300) throw new Error(`POST /batch/ refused 300 times (last: ${text.slice(0, 200)})`);
      await Bun.sleep(Math.min(5, Math.max(0.2, retryAfter)) * 1000);
    }
  };
  const inFlight = new Set<Promise<void>>();
  try {
    for (const b of bodies) {
      const p = post(b).finally(() => inFlight.delete(p));
      inFlight.add(p);
      if (inFlight.size >= IN_FLIGHT) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
  } finally {
    progress.finish();
  }
  const seconds = (performance.now() - started) / 1000;
  const seen = await waitForCount(target, before + total, 0, Math.max(120_000, total / 5));
  if (seen.count !== before + total) env.problems.push(`after the load the events API counts ${seen.count} events, ${before + total} expected`);
  return { seconds, queryableS: seen.seconds };
}

async function timedGet(target: ServerTarget, path: string): Promise<{ ms: number; results: number }> {
  const t0 = performance.now();
  const response = await fetch(target.url + path, { headers: { authorization: `Bearer ${target.personalKey}` } });
  const body = await response.text();
  const ms = performance.now() - t0;
  if (response.status !== 200) throw new Error(`GET ${path}: ${response.status} ${body.slice(0, 300)}`);
  return { ms, results: (JSON.parse(body) as { results: unknown[] }).results.length };
}

/** One export of every event of the project, read to the end; csv rows are its lines but the header. */
async function exportOnce(env: HeadlineEnv, format: 'csv' | 'parquet', expectedRows: number, expectedBytes: number | null, label: string): Promise<ExportSample> {
  const { target } = env;
  const progress = format === 'csv' ? startProgress(label, expectedRows, 'rows') : startProgress(label, Math.max(1, expectedBytes ?? 1), 'bytes');
  const t0 = performance.now();
  let bytes = 0;
  let lines = 0;
  try {
    const response = await fetch(`${target.url}/api/projects/${target.projectId}/events/?format=${format}`, { headers: { authorization: `Bearer ${target.personalKey}` } });
    if (response.status !== 200) throw new Error(`${format} export: ${response.status} ${(await response.text()).slice(0, 300)}`);
    const reader = response.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      if (format === 'csv') for (let i = value.indexOf(10); i >= 0; i = value.indexOf(10, i + 1)) lines++;
      progress.update(format === 'csv' ? Math.max(0, lines - 1) : bytes);
    }
  } finally {
    // The Parquet file's size was an estimate (the Parquet files on disk): it is known now.
    progress.finish(format === 'csv' ? undefined : bytes);
  }
  return { seconds: (performance.now() - t0) / 1000, rows: format === 'csv' ? Math.max(0, lines - 1) : expectedRows, bytes, peakMb: await env.sampler.peakMb() };
}

/** `hogbase_parquet_bytes` and `_rows` of the server's /metrics. */
async function parquetMetrics(url: string): Promise<{ bytes: number | null; rows: number | null }> {
  const text = await fetch(`${url}/metrics`).then((r) => (r.ok ? r.text() : ''), () => '');
  const read = (name: string) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+([\\d.e+]+)`, 'm').exec(text);
    return m ? Number(m[1]) : null;
  };
  return { bytes: read('hogbase_parquet_bytes'), rows: read('hogbase_parquet_rows') };
}

/** Bytes a directory tree takes on disk (allocated blocks, as du counts them). */
export async function allocatedBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await allocatedBytes(path);
    else total += await stat(path).then((s) => s.blocks * 512, () => 0);
  }
  return total;
}
