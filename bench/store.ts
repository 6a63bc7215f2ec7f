import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { StoredEventRow } from '../src/core/events/columns';
import { isAppError } from '../src/errors';
import { openDatabase } from '../src/storage/db';
import { createEventStore, type EventStoreOptions } from '../src/storage/events';
import { openStorage } from '../src/storage';
import { createEventGenerator } from './_events';
import type { BenchRow, Benchmark } from './types';
import { withPipeline } from '../src/pipeline';

/**
 * The event store's write path: bursts appended in batches of 100 and 10,000 (durable and
 * relaxed), a sustained run into queryable storage with flushes, checkpoints and compaction
 * included, and same-run baselines: JSON.parse of the same events, and DuckDB's own bulk load
 * of the same events from an NDJSON file.
 */
const bench: Benchmark = async ({ tmpDir, quick, log }) => {
  const poolSize = quick ? 40_000 : 150_000;
  const burstRows = quick ? 60_000 : 400_000;
  const sustainedMs = quick ? 8_000 : 60_000;
  const repeats = quick ? 1 : 3;
  log(`generating ${poolSize.toLocaleString()} events`);
  const gen = createEventGenerator(7);
  const pool = Array.from({ length: poolSize }, gen);
  const avgBytes = pool.reduce((n, r) => n + r.properties.length + 150, 0) / pool.length;
  const rows: BenchRow[] = [];
  const notes: string[] = [`~${Math.round(avgBytes)} bytes/event (${Object.keys(JSON.parse(pool[0].properties)).length} properties); medians of ${repeats} run(s)`];

  if (process.env.ONLY_SUSTAINED) {
    const s = await sustained(join(tmpDir, 'sustained'), pool, sustainedMs, log);
    return { name: 'store', rows: [{ case: 'sustained', 'rows/s': s.storedRate, 'acked rows/s': s.ackedRate }], notes };
  }
  // ---- baselines ------------------------------------------------------------------------------
  const bodies: string[] = [];
  for (let i = 0; i < pool.length; i += 100) bodies.push(JSON.stringify(pool.slice(i, i + 100).map(toWire)));
  const parseRates: number[] = [];
  for (let k = 0; k < repeats; k++) {
    const t0 = performance.now();
    for (const b of bodies) JSON.parse(b);
    parseRates.push(pool.length / ((performance.now() - t0) / 1000));
  }
  rows.push({ case: 'baseline: JSON.parse of the same events (100/body)', 'rows/s': median(parseRates), p50_ms: null, p99_ms: null, peak_rss_mb: rssMb() });

  const ndjson = join(tmpDir, 'events.ndjson');
  await writeFile(ndjson, pool.map((r) => JSON.stringify(toWire(r))).join('\n'));
  const loadRates: number[] = [];
  for (let k = 0; k < repeats; k++) {
    const db = await openDatabase(join(tmpDir, `baseline-${k}.duckdb`));
    const t0 = performance.now();
    await db.run(
      `CREATE TABLE events AS SELECT uuid, team_id, event, distinct_id, properties, to_timestamp(timestamp / 1000) AS timestamp FROM read_ndjson('${ndjson}', columns = {uuid: 'VARCHAR', team_id: 'INTEGER', event: 'VARCHAR', distinct_id: 'VARCHAR', properties: 'JSON', timestamp: 'BIGINT'})`,
    );
    await db.run('CHECKPOINT');
    loadRates.push(pool.length / ((performance.now() - t0) / 1000));
    await db.close();
  }
  rows.push({ case: 'baseline: DuckDB read_ndjson bulk load (file DB)', 'rows/s': median(loadRates), p50_ms: null, p99_ms: null, peak_rss_mb: rssMb() });

  // ---- bursts ---------------------------------------------------------------------------------
  for (const durability of ['durable', 'relaxed'] as const) {
    for (const batch of [100, 10_000]) {
      const runs: BurstResult[] = [];
      for (let k = 0; k < repeats; k++) {
        runs.push(await burst(join(tmpDir, `burst-${durability}-${batch}-${k}`), pool, burstRows, batch, { durability }));
      }
      const row = burstRow(`append burst batch=${batch} ${durability}`, runs);
      rows.push(row);
      log(`burst ${durability} batch=${batch}: ${Math.round(row['rows/s'] as number).toLocaleString()} rows/s acked`);
    }
  }

  // ---- capture requests: logged as they come, processed behind the acknowledgement --------------
  const wire = pool.map(toCapture);
  for (const batch of [100, 10_000]) {
    const runs: BurstResult[] = [];
    for (let k = 0; k < repeats; k++) runs.push(await intakeBurst(join(tmpDir, `intake-${batch}-${k}`), wire, burstRows, batch));
    const row = burstRow(`capture burst batch=${batch} durable (JSON.parse + appendIntake; processed behind)`, runs);
    rows.push(row);
    log(`capture burst batch=${batch}: ${Math.round(row['rows/s'] as number).toLocaleString()} events/s acked, ${Math.round(row['loaded rows/s'] as number).toLocaleString()}/s processed and loaded`);
  }

  // Single-event requests, the same burst twice: the events' own (repeating) distinct ids, and a
  // new id per request with the pending-id memory capped well below the burst (as a long
  // anonymous burst fills the default 500k cap), so every request past the cap meets it.
  const singles = quick ? 20_000 : 80_000;
  for (const [tag, label, opts] of [['repeating', 'repeating ids', {}], ['unique', 'a new id each, past a 10k pending-id cap', { uniqueIds: true, maxPendingIds: 10_000 }]] as const) {
    const runs: BurstResult[] = [];
    for (let k = 0; k < repeats; k++) runs.push(await intakeBurst(join(tmpDir, `intake-1-${tag}-${k}`), wire, singles, 1, opts));
    const row = burstRow(`capture burst batch=1 durable, ${label}`, runs);
    rows.push(row);
    log(`capture burst batch=1 ${label}: ${Math.round(row['rows/s'] as number).toLocaleString()} events/s acked`);
  }

  // ---- sustained ------------------------------------------------------------------------------
  const s = await sustained(join(tmpDir, 'sustained'), pool, sustainedMs, log);
  rows.push({
    case: `sustained ${sustainedMs / 1000}s batch=1000 durable, into queryable storage`,
    'rows/s': s.storedRate,
    p50_ms: s.p50,
    p99_ms: s.p99,
    peak_rss_mb: s.peakRss,
    'acked rows/s': s.ackedRate,
    'core-µs/row': s.cpuPerRow,
  });
  rows.push({
    case: 'compact() after the sustained run (merge each team-day into one file)',
    'rows/s': s.compactRate,
    p50_ms: null,
    p99_ms: null,
    peak_rss_mb: rssMb(),
  });
  rows.push({ case: 'query: latest 100 of team 1', 'query ms before compact': s.queries.latest, 'query ms after compact': s.after.latest });
  rows.push({ case: 'query: 1-hour window count of team 1', 'query ms before compact': s.queries.window, 'query ms after compact': s.after.window });
  notes.push(
    `sustained: ${s.acked.toLocaleString()} rows acked in ${sustainedMs / 1000}s, all queryable ${(s.drainMs / 1000).toFixed(1)}s later ` +
      `(${s.compactions} compactions, ${s.checkpoints} checkpoints, ${s.rejected} appends refused with 503, ${s.parquetRows.toLocaleString()} rows in Parquet); ` +
      `rows/s = queryable rows / (run + drain)`,
  );
  notes.push(`load average at the end: ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')} (2 cores; other processes share them)`);
  const rate = (name: string) => rows.find((r) => String(r.case).startsWith(name))?.['rows/s'] as number;
  notes.push(
    `ratios: durable append batch=10000 burst vs JSON.parse ${(rate('append burst batch=10000 durable') / rate('baseline: JSON.parse')).toFixed(2)}x; ` +
      `capture burst batch=10000 (its JSON.parse included) vs JSON.parse ${(rate('capture burst batch=10000') / rate('baseline: JSON.parse')).toFixed(2)}x; ` +
      `sustained vs DuckDB read_ndjson load ${(s.storedRate / rate('baseline: DuckDB')).toFixed(2)}x; ` +
      `single-event burst with a new id each past the pending-id cap vs repeating ids ${(rate('capture burst batch=1 durable, a new') / rate('capture burst batch=1 durable, repeating')).toFixed(2)}x`,
  );
  notes.push(
    'capture burst: what a capture request costs the store since requests are acknowledged once logged: the body is parsed (as the HTTP handler does), ' +
      'logged as an intake frame, group-committed with fdatasync, acknowledged; normalization, persons and rows follow behind (loaded rows/s = all of it, until queryable)',
  );
  return { name: 'store', rows, notes };
};

export default bench;

function debugLogger(log: (m: string) => void) {
  const on = !!process.env.BENCH_DEBUG;
  const out = (m: string, meta?: Record<string, unknown>) => on && log(`    [store] ${m} ${meta ? JSON.stringify(meta) : ''}`);
  return { info: out, warn: out, error: out };
}

/** An event as an SDK sends it (no uuid: bodies are reused, and the server makes one per event). */
function toCapture(r: StoredEventRow) {
  return { event: r.event, distinct_id: r.distinctId, properties: JSON.parse(r.properties), timestamp: new Date(r.timestamp).toISOString() };
}

/**
 * Capture requests of `batch` events through the real storage (intake log + processing
 * pipeline with persons and definitions): each body is parsed and logged, as the HTTP handler
 * does, with `concurrency` requests in flight; then everything is processed and loaded.
 */
/**
 * `uniqueIds`: every request names a distinct id never seen before (an anonymous burst), with the
 * pending-id memory capped at `maxPendingIds`, so the run goes past the cap; else the events' own ids.
 */
async function intakeBurst(dir: string, wire: readonly object[], total: number, batch: number, opts: { uniqueIds?: boolean; maxPendingIds?: number } = {}): Promise<BurstResult> {
  await mkdir(dir, { recursive: true });
  const storage = await openStorage(withPipeline({ dataDir: dir, durability: 'durable', eventStore: { autoCompact: false, maxPendingIds: opts.maxPendingIds } }));
  const bodies: string[] = [];
  for (let i = 0; i + batch <= wire.length && bodies.length * batch < total; i += batch) bodies.push(JSON.stringify({ api_key: 'phc_bench', batch: wire.slice(i, i + batch) }));
  const requests = Math.ceil(total / batch);
  const concurrency = batch >= 10_000 ? 4 : 64;
  const latencies: number[] = [];
  const peak = rssSampler();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await drive(concurrency, requests, latencies, (i) => {
    const text = bodies[i % bodies.length];
    const events = (JSON.parse(text) as { batch: Array<{ distinct_id: string }> }).batch;
    return storage.events.appendIntake({
      context: { teamId: 1, receivedAt: Date.now(), ip: '127.0.0.1', anonymizeIps: false, sentAt: null, engage: false },
      body: text,
      events: events.length,
      parsed: events,
      distinctIds: opts.uniqueIds ? events.map((_, k) => `visitor-${i}-${k}`) : events.map((e) => e.distinct_id),
    });
  });
  const ackMs = performance.now() - t0;
  await storage.events.flush();
  const loadedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const peakRss = peak();
  const acked = requests * batch;
  await storage.close();
  await rm(dir, { recursive: true, force: true });
  return burstResult(acked, ackMs, loadedMs, latencies, cpu, peakRss);
}

function toWire(r: StoredEventRow) {
  return { uuid: r.uuid, team_id: r.teamId, event: r.event, distinct_id: r.distinctId, properties: JSON.parse(r.properties), timestamp: r.timestamp };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};
const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? 0;
};
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

/** Rows from the pool with fresh uuids (so nothing is deduped away). */
function makeFeeder(pool: readonly StoredEventRow[], prefix: string) {
  let i = 0;
  return (n: number): StoredEventRow[] => {
    const out: StoredEventRow[] = new Array(n);
    for (let k = 0; k < n; k++, i++) {
      const r = pool[i % pool.length];
      out[k] = { ...r, uuid: `${prefix}-${i.toString(16).padStart(12, '0')}` };
    }
    return out;
  };
}

/**
 * `count` calls of `send(i)` with `concurrency` in flight, each timed into `latencies`; a 503
 * (the store's backpressure) is retried after 20 ms, as a client would.
 */
async function drive(concurrency: number, count: number, latencies: number[], send: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        for (;;) {
          const s = performance.now();
          try {
            await send(i);
            latencies.push(performance.now() - s);
            break;
          } catch (error) {
            if (!isAppError(error) || error.kind !== 'unavailable') throw error;
            await Bun.sleep(20);
          }
        }
      }
    }),
  );
}

interface BurstResult {
  /** Core-microseconds per row, acknowledging and loading (every thread of the process). */
  cpuPerRow: number;
  rate: number;
  loadedRate: number;
  p50: number;
  p99: number;
  peakRss: number;
}

export async function burst(dir: string, pool: readonly StoredEventRow[], total: number, batch: number, opts: Partial<EventStoreOptions>): Promise<BurstResult> {
  await mkdir(dir, { recursive: true });
  const db = await openDatabase(join(dir, 'db.duckdb'));
  const store = await createEventStore(db, { dataDir: dir, autoCompact: false, ...opts });
  const feed = makeFeeder(pool, `b${batch}${opts.durability}`);
  const batches = Array.from({ length: Math.ceil(total / batch) }, () => feed(batch));
  const concurrency = batch >= 10_000 ? 4 : 32;
  const latencies: number[] = [];
  const peak = rssSampler();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await drive(concurrency, batches.length, latencies, (i) => store.append(batches[i]));
  const ackMs = performance.now() - t0;
  await store.flush();
  const loadedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const peakRss = peak();
  await store.close();
  await db.close();
  await rm(dir, { recursive: true, force: true });
  return burstResult(total, ackMs, loadedMs, latencies, cpu, peakRss);
}

/** The median run's rate, the other figures' medians (peak RSS: the highest). */
function burstRow(name: string, runs: readonly BurstResult[]): BenchRow {
  const byRate = [...runs].sort((a, b) => a.rate - b.rate);
  return {
    case: name,
    'rows/s': byRate[Math.floor(byRate.length / 2)].rate,
    p50_ms: median(runs.map((r) => r.p50)),
    p99_ms: median(runs.map((r) => r.p99)),
    peak_rss_mb: Math.max(...runs.map((r) => r.peakRss)),
    'loaded rows/s': median(runs.map((r) => r.loadedRate)),
    'core-µs/row': median(runs.map((r) => r.cpuPerRow)),
  };
}

function burstResult(rows: number, ackMs: number, loadedMs: number, latencies: number[], cpu: NodeJS.CpuUsage, peakRss: number): BurstResult {
  return {
    rate: rows / (ackMs / 1000),
    loadedRate: rows / (loadedMs / 1000),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    peakRss,
    cpuPerRow: (cpu.user + cpu.system) / rows,
  };
}

export async function sustained(dir: string, pool: readonly StoredEventRow[], ms: number, log: (m: string) => void, extra: Partial<EventStoreOptions> = {}) {
  await mkdir(dir, { recursive: true });
  const db = await openDatabase(join(dir, 'db.duckdb'));
  const store = await createEventStore(db, { dataDir: dir, compactMinRows: 1_000_000, purgeGraceMs: 5_000, logger: debugLogger(log), ...extra });
  const feed = makeFeeder(pool, 'sus');
  const latencies: number[] = [];
  let acked = 0;
  let rejected = 0;
  const peak = rssSampler();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const deadline = t0 + ms;
  const progress = setInterval(() => {
    const st = store.stats();
    log(`  ${((performance.now() - t0) / 1000).toFixed(0)}s acked=${acked.toLocaleString()} loaded=${st.flushedRows.toLocaleString()} parquet=${st.parquetRows.toLocaleString()} pendingMB=${(st.pendingBytes / 1048576).toFixed(0)} rss=${rssMb()}MB`);
  }, 5_000);
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (performance.now() < deadline) {
        const b = feed(1000);
        const s = performance.now();
        try {
          await store.append(b);
          latencies.push(performance.now() - s);
          acked += b.length;
        } catch (error) {
          if (!isAppError(error) || error.kind !== 'unavailable') throw error;
          rejected++;
          await Bun.sleep(50);
        }
      }
    }),
  );
  const runMs = performance.now() - t0;
  await store.flush();
  const drainMs = performance.now() - t0 - runMs;
  const cpu = process.cpuUsage(cpu0);
  clearInterval(progress);
  const rel = await store.eventsRelation(1);
  const [{ n }] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM ${rel.sql} AS events`);
  const st = store.stats();
  const stored = st.flushedRows;
  const peakRss = peak();
  log(`  team 1 has ${n.toLocaleString()} queryable rows in ${st.parquetFiles} Parquet files + hot; total loaded ${stored.toLocaleString()} of ${acked.toLocaleString()} acked`);
  const queries = await timeQueries(store, db);
  // The deferred part of compaction (merging each team-day's load files), measured on its own.
  const c0 = performance.now();
  await store.compact();
  const compactMs = performance.now() - c0;
  const after = await timeQueries(store, db);
  log(`  compact(): ${(compactMs / 1000).toFixed(1)}s for ${stored.toLocaleString()} rows -> ${store.stats().parquetFiles} files; latest-100 ${queries.latest.toFixed(0)} -> ${after.latest.toFixed(0)} ms, 1-hour window ${queries.window.toFixed(0)} -> ${after.window.toFixed(0)} ms`);
  await store.close();
  await db.close();
  await rm(dir, { recursive: true, force: true });
  return {
    acked,
    ackedRate: acked / (runMs / 1000),
    storedRate: stored / ((runMs + drainMs) / 1000),
    drainMs,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    peakRss,
    rejected,
    compactions: st.compactions,
    checkpoints: st.checkpoints,
    parquetRows: st.parquetRows,
    cpuPerRow: (cpu.user + cpu.system) / stored,
    compactRate: stored / (compactMs / 1000),
    queries,
    after,
  };
}

/** Median of 3: latest 100 events of team 1, and a one-hour window count (time-pruned files). */
async function timeQueries(store: Awaited<ReturnType<typeof createEventStore>>, db: Awaited<ReturnType<typeof openDatabase>>) {
  const time = async (fn: () => Promise<unknown>) => {
    const xs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = performance.now();
      await fn();
      xs.push(performance.now() - t);
    }
    return median(xs);
  };
  const latest = await time(async () => {
    const rel = await store.eventsRelation(1);
    await db.query(`SELECT * FROM ${rel.sql} AS events ORDER BY timestamp DESC LIMIT 100`);
  });
  const [{ hi }] = await db.query<{ hi: Date }>(`SELECT max(timestamp) AS hi FROM ${(await store.eventsRelation(1)).sql} AS events`);
  const window = await time(async () => {
    const to = hi.getTime() + 1;
    const rel = await store.eventsRelation(1, { from: to - 3_600_000, to });
    await db.query(`SELECT count(*) FROM ${rel.sql} AS events WHERE timestamp >= make_timestamp(${to - 3_600_000}::BIGINT * 1000)`);
  });
  return { latest, window };
}
