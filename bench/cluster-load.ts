import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { missingEngines } from '../src/cli/cluster/engines';
import { readState } from '../src/cli/cluster/processes';
import { cluster, summaryOf } from '../test/helpers/cluster';
import { cpuSeconds, peakRssMb, resetPeakRss, spawnRealServer } from './_ingest-procs';
import { BENCH_KEYS } from './_http';
import type { BenchRow, Benchmark } from './types';

/**
 * The local cluster (`npm run cluster -- up`: two nodes, one writer, Redis, PostgreSQL, two
 * ClickHouse shards) under SDK-shaped `/batch/` requests to both nodes, next to the single server
 * with its DuckDB store under the same requests, in the same run. For each: acknowledged events/s
 * (200s over the load's time), queryable events/s (until the events API of the last node counts
 * every acknowledged event: the path a user reads, not a side door into ClickHouse), and each
 * process's peak RSS and CPU per event. On a 2-core machine every process shares the same two
 * cores: this sizes roles, it shows no scaling.
 *
 * `npm run bench -- cluster-load [--quick]`, or alone:
 * `bun bench/cluster-load.ts [events] [per-request] [in-flight]` (prints the report as JSON).
 * Skipped, saying which, when the engines' binaries are not installed.
 */
export interface LoadShape {
  events: number;
  perRequest: number;
  inFlight: number;
  /** No request is started after this: the load is bounded in time as well as in count. */
  maxSeconds: number;
}

interface Target {
  nodes: string[];
  projectId: number;
  projectKey: string;
  personalKey: string;
  procs: Array<{ role: string; pid: number }>;
}

interface Measured {
  acknowledged: number;
  non200: number;
  ackEventsPerS: number;
  queryableEventsPerS: number | null;
  queryableAfterS: number;
  perProcess: Array<{ role: string; peakMb: number | null; cpuUsPerEvent: number | null }>;
}

const QUERYABLE_TIMEOUT_MS = 300_000;
const round = (n: number | null, digits = 0) => (n !== null && Number.isFinite(n) ? Number(n.toFixed(digits)) : null);

/** The requests, built before the clock starts: every event with its own uuid, as SDKs send them. */
function bodies(apiKey: string, shape: LoadShape): string[] {
  const props = { $browser: 'Chrome', $os: 'Linux', $current_url: 'https://example.com/pricing?utm_source=bench', plan: 'pro', path: '/pricing' };
  const now = Date.now();
  return Array.from({ length: Math.ceil(shape.events / shape.perRequest) }, (_, n) =>
    JSON.stringify({
      api_key: apiKey,
      batch: Array.from({ length: shape.perRequest }, (_, i) => ({
        event: '$pageview',
        distinct_id: `u-${(n * shape.perRequest + i) % 5000}`,
        uuid: crypto.randomUUID(),
        // One millisecond apart, ending now: a time ahead of the clock is outside the events list's default window.
        timestamp: new Date(now - shape.events + n * shape.perRequest + i).toISOString(),
        properties: { ...props, n: i },
      })),
    }),
  );
}

async function countListed(target: Target): Promise<number | null> {
  const node = target.nodes[target.nodes.length - 1]!;
  const answer = await fetch(`${node}/api/projects/${target.projectId}/events/?limit=1`, { headers: { authorization: `Bearer ${target.personalKey}` } }).catch(() => null);
  if (answer?.status !== 200) return null;
  const body = (await answer.json()) as { count?: unknown };
  return typeof body.count === 'number' ? body.count : null;
}

/** The load against one deployment (requests spread over its nodes), then until it is all queryable. */
export async function measureLoad(target: Target, shape: LoadShape): Promise<Measured> {
  const requests = bodies(target.projectKey, shape);
  for (const p of target.procs) resetPeakRss(p.pid);
  const cpu0 = target.procs.map((p) => cpuSeconds(p.pid));
  let acknowledged = 0;
  let non200 = 0;
  let next = 0;
  const t0 = performance.now();
  const deadline = t0 + shape.maxSeconds * 1000;
  await Promise.all(
    Array.from({ length: shape.inFlight }, async () => {
      while (next < requests.length && performance.now() < deadline) {
        const n = next++;
        const answer = await fetch(`${target.nodes[n % target.nodes.length]}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: requests[n] }).catch(() => null);
        await answer?.arrayBuffer();
        if (answer?.status === 200) acknowledged += shape.perRequest;
        else non200++;
      }
    }),
  );
  const ackedS = (performance.now() - t0) / 1000;
  let listed: number | null = null;
  while (performance.now() - t0 < ackedS * 1000 + QUERYABLE_TIMEOUT_MS) {
    listed = await countListed(target);
    if (listed !== null && listed >= acknowledged) break;
    await Bun.sleep(100);
  }
  const storedS = (performance.now() - t0) / 1000;
  const queryable = listed !== null && listed >= acknowledged;
  return {
    acknowledged,
    non200,
    ackEventsPerS: acknowledged / ackedS,
    queryableEventsPerS: queryable ? acknowledged / storedS : null,
    queryableAfterS: storedS - ackedS,
    perProcess: target.procs.map((p, i) => {
      const cpu = cpuSeconds(p.pid);
      const used = cpu !== null && cpu0[i] !== null ? cpu - cpu0[i]! : null;
      return { role: p.role, peakMb: peakRssMb(p.pid), cpuUsPerEvent: used !== null && acknowledged ? round((used * 1e6) / acknowledged, 1) : null };
    }),
  };
}

async function measureSingleServer(shape: LoadShape): Promise<Measured> {
  const server = await spawnRealServer();
  try {
    return await measureLoad({ nodes: [server.url], projectId: 1, projectKey: BENCH_KEYS.project, personalKey: BENCH_KEYS.personal, procs: [{ role: 'server', pid: server.pid }] }, shape);
  } finally {
    await server.stop();
  }
}

async function measureCluster(shape: LoadShape): Promise<Measured> {
  const dir = mkdtempSync(join(tmpdir(), 'hogbase-cluster-bench-'));
  try {
    const started = await cluster('up', dir);
    if (started.code !== 0) throw new Error(`cluster up failed (${started.code}): ${started.stderr}`);
    const up = summaryOf(started.stdout);
    const procs = Object.entries(readState(dir)!.pids).flatMap(([role, list]) => list.map((p, i) => ({ role: list.length > 1 ? `${role}[${i}]` : role, pid: p.pid })));
    return await measureLoad({ nodes: up.nodes, projectId: up.project_id, projectKey: up.project_api_key, personalKey: up.personal_api_key, procs }, shape);
  } finally {
    await cluster('down', dir);
    rmSync(dir, { recursive: true, force: true });
  }
}

const totalRss = (m: Measured) => (m.perProcess.every((p) => p.peakMb !== null) ? m.perProcess.reduce((sum, p) => sum + p.peakMb!, 0) : null);

function rowsOf(name: string, m: Measured): BenchRow[] {
  return [
    {
      case: name,
      'acknowledged events/s': round(m.ackEventsPerS),
      'queryable events/s': round(m.queryableEventsPerS),
      'queryable after s': round(m.queryableAfterS, 2),
      'peak RSS MB': totalRss(m),
      events: m.acknowledged,
      'non-200': m.non200,
    },
    ...m.perProcess.map((p) => ({ case: `${name}: ${p.role}`, 'peak RSS MB': p.peakMb, 'CPU µs/event': p.cpuUsPerEvent })),
  ];
}

const SINGLE = 'single server, DuckDB store';
const CLUSTER = 'cluster: 2 nodes, 1 writer, Redis, PostgreSQL, 2 ClickHouse 18.16 shards';

const bench: Benchmark = async (ctx) => {
  const missing = missingEngines();
  if (missing.length) {
    const note = `skipped: the cluster needs the engines' binaries, missing ${missing.join('; ')}`;
    ctx.log(note);
    return { name: 'cluster-load', rows: [], notes: [note] };
  }
  const shape: LoadShape = ctx.quick ? { events: 5_000, perRequest: 100, inFlight: 8, maxSeconds: 10 } : { events: 50_000, perRequest: 100, inFlight: 8, maxSeconds: 60 };
  ctx.log(`${shape.events.toLocaleString()} events in /batch/ requests of ${shape.perRequest}, ${shape.inFlight} in flight, at most ${shape.maxSeconds} s of load each`);
  const single = await measureSingleServer(shape);
  ctx.log(`${SINGLE}: acknowledged ${round(single.ackEventsPerS)}/s, queryable ${round(single.queryableEventsPerS)}/s`);
  const clustered = await measureCluster(shape);
  ctx.log(`${CLUSTER}: acknowledged ${round(clustered.ackEventsPerS)}/s, queryable ${round(clustered.queryableEventsPerS)}/s`);
  const notes = [
    'both measured in this run with the same requests (SDK-shaped /batch/, a uuid per event, 5,000 people), sent from this process over loopback to every node in turn',
    'queryable: until the events API of the (last) node counts every acknowledged event, from the start of the load; that node also answers this polling (every 100 ms), which is in its CPU per event',
    'peak RSS: VmHWM of each process, reset before the load; PostgreSQL is its postmaster only (its backends are other processes)',
    'on a 2-core machine every role shares the same cores with the load generator: no speed-up is expected from the cluster',
  ];
  if (single.queryableEventsPerS && clustered.queryableEventsPerS) {
    notes.push(`cluster / single server: acknowledged ${round(clustered.ackEventsPerS / single.ackEventsPerS, 2)}x, queryable ${round(clustered.queryableEventsPerS / single.queryableEventsPerS, 2)}x`);
  }
  for (const [name, m] of [[SINGLE, single], [CLUSTER, clustered]] as const) {
    if (m.queryableEventsPerS === null) notes.push(`PROBLEM: ${name}: not every acknowledged event was listed within ${QUERYABLE_TIMEOUT_MS / 1000} s`);
    if (m.non200) notes.push(`PROBLEM: ${name}: ${m.non200} request(s) not answered 200`);
  }
  return { name: 'cluster-load', rows: [...rowsOf(SINGLE, single), ...rowsOf(CLUSTER, clustered)], notes };
};

export default bench;

if (import.meta.main) {
  const [events = 100_000, perRequest = 100, inFlight = 8] = process.argv.slice(2).map(Number);
  const missing = missingEngines();
  if (missing.length) {
    console.error(`skipped: missing ${missing.join('; ')}`);
    process.exit(0);
  }
  const m = await measureCluster({ events, perRequest, inFlight, maxSeconds: 600 });
  console.log(JSON.stringify({ events: m.acknowledged, per_request: perRequest, in_flight: inFlight, ...rowsOf(CLUSTER, m)[0], roles: m.perProcess }, null, 1));
}
