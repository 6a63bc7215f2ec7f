import { apiJson, percentile, startQueryProbe } from './_http';
import { peakRssMb, rssMb, spawnRealServer } from './_ingest-procs';
import { batchBodies } from './_ingest-payloads';
import { spawnedTarget, waitForCount } from './_target';
import type { BenchRow, Benchmark } from './types';

/**
 * A long saturating load on the path production runs: the real server (durable, as `npm start`
 * runs it) under ~1 MB `/batch/` bodies on 4 connections for `SOAK_MINUTES` (10 by default; 1
 * with --quick), the events-list probe beside it. What a 60-s run does not show: merges come in
 * after minutes, and memory that grows does so slowly. Sampled every 30 s from
 * `/metrics` and /proc: the rate stored in the window, RSS, the log's backlog, the share of
 * the window that loads and merges were busy, and the Parquet files loads read to rule out
 * repeats. At the end: acknowledged and stored events/s (acknowledged events over the load plus
 * the wait until the events API counts them all), the peak RSS, refusals (503 once the backlog is
 * at its cap) and dead letters. The baseline is the run's own first minute: a stored rate that
 * falls from it is the store falling behind (the floors are the ingest bench's).
 */
const SAMPLE_MS = 30_000;
const CONNECTIONS = 4;
/** A request the server has not answered by then is abandoned, so a hung server ends the run too. */
const REQUEST_TIMEOUT_MS = 60_000;

const bench: Benchmark = async ({ quick, log }) => {
  const minutes = Number(process.env.SOAK_MINUTES ?? (quick ? 1 : 10));
  if (!(minutes > 0 && minutes <= 120)) throw new Error('SOAK_MINUTES is 1 to 120');
  const bodies = batchBodies(quick ? 8 : 40, 1_000_000, { gzip: false, seed: 41 });
  const server = await spawnRealServer({ LOG_LEVEL: 'warn' });
  const rows: BenchRow[] = [];
  try {
    const end = Date.now() + minutes * 60_000;
    let acked = 0;
    let refused = 0;
    let next = 0;
    const post = async () => {
      while (Date.now() < end) {
        const body = bodies[next++ % bodies.length]!;
        try {
          const res = await fetch(`${server.url}/batch/`, { method: 'POST', body: body.body, headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
          await res.arrayBuffer();
          if (res.status === 200) acked += body.events;
          else {
            refused++;
            await Bun.sleep(200);
          }
        } catch {
          await Bun.sleep(100);
        }
      }
    };
    const probe = startQueryProbe((path) => apiJson(server.url, 'GET', path).then((r) => r.status === 200, () => false));
    const started = Date.now();
    let last = { at: started, stored: 0, merge: 0, load: 0, dedupe: 0 };
    let firstMinuteRate: number | null = null;
    const sample = async () => {
      while (Date.now() < end) {
        await Bun.sleep(Math.min(SAMPLE_MS, Math.max(0, end - Date.now())));
        const metrics = await (await fetch(`${server.url}/metrics`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })).text();
        const now = Date.now();
        const seconds = (now - last.at) / 1000;
        const at = { at: now, stored: metric(metrics, 'hogbase_ingest_events_stored_total'), merge: metric(metrics, 'hogbase_storage_work_duration_seconds_sum{work="merge"}'), load: metric(metrics, 'hogbase_storage_work_duration_seconds_sum{work="load"}'), dedupe: metric(metrics, 'hogbase_storage_dedupe_files_read_total') };
        const rate = (at.stored - last.stored) / seconds;
        if (now - started <= 61_000) firstMinuteRate = (at.stored) / ((now - started) / 1000);
        const row: BenchRow = {
          case: `minute ${((now - started) / 60_000).toFixed(1)}`,
          'stored events/s': Math.round(rate),
          'vs first minute': firstMinuteRate ? Math.round((rate / firstMinuteRate) * 100) / 100 : null,
          'RSS MB': rssMb(server.pid),
          'log backlog MB': Math.round(metric(metrics, 'hogbase_log_backlog_bytes') / 1e6),
          'loads busy': Math.round(((at.load - last.load) / seconds) * 100) / 100,
          'merges busy': Math.round(((at.merge - last.merge) / seconds) * 100) / 100,
          'dedupe files read': at.dedupe - last.dedupe,
          refused,
        };
        rows.push(row);
        log(`   ${Object.entries(row).map(([k, v]) => `${k} ${v}`).join(', ')}`);
        last = at;
      }
    };
    await Promise.all([...Array.from({ length: CONNECTIONS }, post), sample()]);
    const loadSeconds = (Date.now() - started) / 1000;
    const queries = await probe.stop();
    const seen = await waitForCount(spawnedTarget(server.url), acked, 0, 600_000);
    const metrics = await (await fetch(`${server.url}/metrics`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) })).text();
    rows.push({
      case: `POST /batch/ ~1 MB, ${CONNECTIONS} connections, ${minutes} min`,
      'acknowledged events/s': Math.round(acked / loadSeconds),
      'stored events/s': Math.round(acked / (loadSeconds + seen.seconds)),
      'countable after s': Math.round(seen.seconds * 10) / 10,
      'peak RSS MB': peakRssMb(server.pid),
      refused,
      'dead letters': metric(metrics, 'hogbase_dead_letters'),
      counted: seen.count,
      acknowledged: acked,
    });
    for (const [name, ms] of Object.entries(queries)) {
      rows.push({ case: `query during the load: ${name}`, n: ms.length, 'p50 ms': Math.round(percentile(ms, 0.5)), 'p99 ms': Math.round(percentile(ms, 0.99)), 'max ms': Math.round(Math.max(...ms)) });
    }
  } finally {
    await server.stop();
  }
  return {
    name: 'soak',
    rows,
    notes: [
      `the real server (durable) under ~1 MB /batch/ bodies (${bodies[0]!.events} events each) on ${CONNECTIONS} connections for ${minutes} min (SOAK_MINUTES), the events-list probe beside it; a row every ${SAMPLE_MS / 1000} s`,
      'stored events/s of a minute row: events stored in that window; vs first minute: against the rate of the first minute (the run\'s own baseline; floors are in the ingest bench); loads/merges busy: the share of the window they ran; dedupe files read: Parquet files the window\'s loads read to rule out repeats (hogbase_storage_dedupe_files_read_total), near 0 unless the uuid filter lost track of files loads still overlap',
      'final row: acknowledged events over the load, stored = acknowledged over the load plus the wait until the events API counts them all; refused: 503 answers (the backlog at its cap: MAX_BACKLOG_SECONDS of loading, or 2 GB of log), retried by the load after 200 ms',
    ],
  };
};

export default bench;

/** One sample's value in the Prometheus text, NaN when absent. */
function metric(text: string, series: string): number {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return Number.NaN;
}
