import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bootstrap } from '../src/bootstrap';
import { loadConfig } from '../src/config';
import { createAppMetrics } from '../src/metrics';
import type { Deps } from '../src/deps';
import { isAppError } from '../src/errors';
import { silentLogger } from '../src/logger';
import { ingest } from '../src/modules/capture/ingest';
import { withPipeline } from '../src/pipeline';
import { openStorage, type Storage } from '../src/storage';
import { openDatabase } from '../src/storage/db';
import { createIngestParser, type IngestParserPool } from '../src/workers/ingest-parser';
import { createApp } from '../src/app';
import { BENCH_KEYS, percentile, startQueryProbe } from './_http';
import { batchBodies, captureBodies, createWebEvents, type Body } from './_ingest-payloads';
import type { BenchRow, Benchmark } from './types';

/**
 * The event store on the path production runs, in process (no HTTP): each request goes through
 * the capture module's `ingest` (decode and parse — in the parser thread for large bodies —, key
 * check, the log's group commit with fdatasync: the acknowledgement), then the pipeline behind
 * it (rows prepared in that thread, persons and definitions on the main thread) and the loader
 * into DuckDB and Parquet, until the events API's own relation counts every acknowledged event.
 *
 * Per case: acknowledged events/s (over the load), queryable events/s (acknowledged events over
 * the load plus the time until all are countable), peak RSS, CPU per event. Baselines in the
 * same run: `JSON.parse` of the same bodies on one core, and DuckDB's own bulk load of the same
 * events from NDJSON (`read_ndjson` into a table, with a checkpoint). The sustained case also
 * runs events-list requests through the app while it loads (latest 100, by event, a select
 * count) and reports their latency: what a query sees of the backlog.
 */
const bench: Benchmark = async ({ tmpDir, quick, log }) => {
  const repeats = quick ? 1 : 3;
  const sustainedS = quick ? 6 : 60;
  const rows: BenchRow[] = [];
  const notes: string[] = [];

  const mb = batchBodies(6, 1_000_000, { gzip: false, seed: 31 });
  const kb100 = batchBodies(12, 100_000, { gzip: false, seed: 32 });
  const singles = captureBodies(quick ? 1000 : 4000, 33);
  notes.push(`bodies: ~1 MB batches of ${mb[0].events} events, ~100 KB of ${kb100[0].events}, single events (posthog-node shape); ~1.1 KB web events with persons work`);

  // ---- baselines -------------------------------------------------------------------------------
  const parseRates: number[] = [];
  for (let k = 0; k < repeats; k++) {
    const t0 = performance.now();
    for (let i = 0; i < 20; i++) JSON.parse(mb[i % mb.length].body.toString('utf8'));
    parseRates.push((20 * mb[0].events) / ((performance.now() - t0) / 1000));
  }
  // Baselines in their own column: neither acknowledges nor stores anything.
  rows.push({ case: 'baseline: JSON.parse of the ~1 MB bodies (one core)', 'baseline events/s': Math.round(median(parseRates)) });

  const ndjson = join(tmpDir, 'events.ndjson');
  const next = createWebEvents(34);
  const ndRows = quick ? 50_000 : 300_000;
  await writeFile(ndjson, Array.from({ length: ndRows }, (_, i) => JSON.stringify({ uuid: `0190${i.toString(16).padStart(28, '0')}`, team_id: 1, ...next() })).join('\n'));
  const loadRates: number[] = [];
  for (let k = 0; k < repeats; k++) {
    const db = await openDatabase(join(tmpDir, `baseline-${k}.duckdb`));
    const t0 = performance.now();
    await db.run(
      `CREATE TABLE events AS SELECT uuid, team_id, event, distinct_id, properties, timestamp FROM read_ndjson('${ndjson}', columns = {uuid: 'VARCHAR', team_id: 'INTEGER', event: 'VARCHAR', distinct_id: 'VARCHAR', properties: 'JSON', timestamp: 'TIMESTAMP'})`,
    );
    await db.run('CHECKPOINT');
    loadRates.push(ndRows / ((performance.now() - t0) / 1000));
    await db.close();
  }
  const ndjsonRate = median(loadRates);
  rows.push({ case: 'baseline: DuckDB read_ndjson bulk load of the same events (file DB + checkpoint)', 'baseline events/s': Math.round(ndjsonRate) });

  // ---- bursts through ingest() -------------------------------------------------------------------
  const bursts: Array<[string, Body[], number, number]> = [
    ['single events, 64 in flight', singles, 64, quick ? 20_000 : 80_000],
    ['~100 KB batches, 16 in flight', kb100, 16, quick ? 60_000 : 400_000],
    ['~1 MB batches, 4 in flight', mb, 4, quick ? 60_000 : 600_000],
  ];
  for (const [label, bodies, inFlight, events] of bursts) {
    const runs: Run[] = [];
    for (let k = 0; k < repeats; k++) {
      const h = await openProduction(join(tmpDir, `burst-${k}-${bodies[0].events}`));
      try {
        runs.push(await load(h, bodies, inFlight, { events }));
      } finally {
        await h.close();
      }
    }
    rows.push(runRow(`burst: ${label}`, runs));
    log(`burst ${label}: ${Math.round(median(runs.map((r) => r.ackedRate)))} acked/s, ${Math.round(median(runs.map((r) => r.queryableRate)))} queryable/s`);
  }

  // ---- sustained ~1 MB batches, with queries ------------------------------------------------------
  const h = await openProduction(join(tmpDir, 'sustained'));
  try {
    const s = await load(h, mb, 4, { seconds: sustainedS, queries: true, log });
    rows.push(runRow(`sustained ${sustainedS} s: ~1 MB batches, 4 in flight`, [s]));
    for (const [name, lat] of Object.entries(s.queries)) {
      rows.push({ case: `query during the sustained load: ${name}`, 'query p50 ms': round(percentile(lat, 0.5)), 'query p99 ms': round(percentile(lat, 0.99)), 'query max ms': round(Math.max(...lat)), queries: lat.length });
    }
    notes.push(
      `sustained: ${s.acked.toLocaleString()} events acknowledged in ${s.loadS.toFixed(1)} s, all countable ${s.afterS.toFixed(1)} s after the last 200; ` +
        `queryable ${Math.round(s.queryableRate).toLocaleString()} events/s = ${(s.queryableRate / ndjsonRate).toFixed(2)}x DuckDB's own NDJSON bulk load of the same events; ` +
        `log backlog at its largest ${s.maxBacklogMb} MB; ${s.refused} requests refused with 503 (retried)`,
    );
  } finally {
    await h.close();
  }
  notes.push('acked events/s: over the load; queryable events/s: acked events / (load + time until the events relation counts all of them); core-µs/event: the whole process');
  return { name: 'store', rows, notes };
};

export default bench;

interface Production {
  deps: Deps;
  storage: Storage;
  app: ReturnType<typeof createApp>;
  close(): Promise<void>;
}

/** The server's parts as `src/index.ts` wires them (default settings), without the socket. */
async function openProduction(dataDir: string): Promise<Production> {
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    BOOTSTRAP_EMAIL: BENCH_KEYS.email,
    BOOTSTRAP_PERSONAL_API_KEY: BENCH_KEYS.personal,
    BOOTSTRAP_PROJECT_API_KEY: BENCH_KEYS.project,
  });
  const parser: IngestParserPool | undefined = config.INGEST_PARSE_THREADS > 0 ? createIngestParser(config.INGEST_PARSE_THREADS, config.MAX_BODY_BYTES, silentLogger) : undefined;
  const storage = await openStorage(
    withPipeline({ dataDir, durability: config.DURABILITY, memoryLimit: config.DUCKDB_MEMORY_LIMIT, personCopies: config.PERSON_COPIES === 'on' }, parser),
  );
  await bootstrap(storage, config);
  const deps: Deps = { config, storage, logger: silentLogger, version: 'bench', now: () => new Date(), ingestParser: parser, metrics: createAppMetrics() };
  return {
    deps,
    storage,
    app: createApp(deps),
    async close() {
      await storage.close();
      await parser?.close();
    },
  };
}

interface Run {
  acked: number;
  loadS: number;
  afterS: number;
  ackedRate: number;
  queryableRate: number;
  peakRss: number;
  cpuPerEvent: number;
  refused: number;
  maxBacklogMb: number;
  queries: Record<string, number[]>;
}

/**
 * Requests through `ingest` with `inFlight` at a time, a 503 retried after 20 ms as a client
 * would, for `events` events or `seconds`; then the wait until every acknowledged event counts.
 */
async function load(h: Production, bodies: readonly Body[], inFlight: number, until: { events?: number; seconds?: number; queries?: boolean; log?: (m: string) => void }): Promise<Run> {
  const perBody = bodies[0].events;
  const requests = until.events ? Math.ceil(until.events / perBody) : Number.POSITIVE_INFINITY;
  const deadline = until.seconds ? performance.now() + until.seconds * 1000 : Number.POSITIVE_INFINITY;
  let sent = 0;
  let acked = 0;
  let refused = 0;
  let maxBacklog = 0;
  const peak = rssSampler();
  const watch = setInterval(() => (maxBacklog = Math.max(maxBacklog, h.storage.events.stats().pendingBytes)), 100);
  const probe = until.queries
    ? startQueryProbe(async (path) => {
        const res = await h.app.handle(new Request(`http://bench.local${path}`, { headers: { authorization: `Bearer ${BENCH_KEYS.personal}` } }));
        await res.arrayBuffer();
        if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
        return true;
      })
    : null;
  const progress = until.log ? setInterval(() => until.log!(`  ${acked.toLocaleString()} acked, backlog ${(h.storage.events.stats().pendingBytes / 1048576).toFixed(0)} MB, rss ${rssMb()} MB`), 10_000) : null;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (sent < requests && performance.now() < deadline) {
        const b = bodies[sent++ % bodies.length];
        for (;;) {
          try {
            // A copy each time: a large body is moved to the parser thread.
            await ingest(h.deps, { body: new Uint8Array(b.body), contentType: 'application/json', contentEncoding: null, query: new URLSearchParams(), ip: '127.0.0.1', engage: false });
            acked += perBody;
            break;
          } catch (error) {
            if (!isAppError(error) || error.kind !== 'unavailable') throw error;
            refused++;
            await Bun.sleep(20);
          }
        }
      }
    }),
  );
  const loadS = (performance.now() - t0) / 1000;
  let stored = 0;
  while ((stored = await countEvents(h)) < acked && performance.now() - t0 < loadS * 1000 + 600_000) await Bun.sleep(100);
  const afterS = (performance.now() - t0) / 1000 - loadS;
  const queries = (await probe?.stop()) ?? {};
  const cpu = process.cpuUsage(cpu0);
  clearInterval(watch);
  if (progress) clearInterval(progress);
  if (stored !== acked) throw new Error(`stored ${stored} ≠ acknowledged ${acked}`);
  return {
    acked,
    loadS,
    afterS,
    ackedRate: acked / loadS,
    queryableRate: acked / (loadS + afterS),
    peakRss: peak(),
    cpuPerEvent: (cpu.user + cpu.system) / acked,
    refused,
    maxBacklogMb: Math.round(maxBacklog / 1048576),
    queries,
  };
}

/** Every event of project 1 as the events relation counts them (what the events API counts). */
async function countEvents(h: Production): Promise<number> {
  const rel = await h.storage.events.eventsRelation(1);
  for await (const chunk of h.storage.events.streamQuery(`SELECT count(*) AS n FROM ${rel.sql} AS events`)) return Number((chunk[0] as { n: number | bigint }).n);
  return 0;
}

function runRow(name: string, runs: readonly Run[]): BenchRow {
  return {
    case: name,
    'acked events/s': Math.round(median(runs.map((r) => r.ackedRate))),
    'queryable events/s': Math.round(median(runs.map((r) => r.queryableRate))),
    'queryable after s': round(median(runs.map((r) => r.afterS))),
    'peak RSS MB': Math.max(...runs.map((r) => r.peakRss)),
    'core-µs/event': round(median(runs.map((r) => r.cpuPerEvent))),
    '503s': runs.reduce((n, r) => n + r.refused, 0),
  };
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : Number.NaN;
};
const round = (n: number) => (Number.isFinite(n) ? Math.round(n * 10) / 10 : null);
// memoryUsage.rss() only: the full memoryUsage() (heap statistics) blocked the main thread for ms under load.
const rssMb = () => Math.round(process.memoryUsage.rss() / 1024 / 1024);

function rssSampler() {
  let peak = rssMb();
  const t = setInterval(() => (peak = Math.max(peak, rssMb())), 25);
  return () => {
    clearInterval(t);
    return Math.max(peak, rssMb());
  };
}
