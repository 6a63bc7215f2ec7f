import { availableParallelism } from 'node:os';
import { isLoopbackHost } from './_args';
import { measureDataset } from './_headline-dataset';
import { buildFigures, figureRows } from './_headline-figures';
import { measureDecide } from './_headline-flags';
import { ingestCases, measureIngest } from './_headline-ingest';
import { findListeningPid, startSampler, type Sampler } from './_headline-sampler';
import type { HeadlineEnv, HeadlineSamples } from './_headline-types';
import { spawnBareServer, spawnDurableFloorServer, spawnRealServer, type Child } from './_ingest-procs';
import { busyReport } from './_machine';
import { allowRemoteHost, resolveTarget, spawnedTarget, type ServerTarget } from './_target';
import type { Benchmark, TimelineSample } from './types';

/**
 * The figures a reader wants first, against the real server over HTTP, each next to its
 * baseline of the same run (`npm run bench`, `npm run bench -- headline [--events 10M]`):
 *
 * - single-event capture and ~1 MB batches: acknowledged and queryable events/s, p50/p99, peak
 *   RSS, next to a bare `Bun.serve` and the durable floor (bare + log + group-commit fdatasync);
 * - `/decide/?v=2` with 20 flags next to the bare server;
 * - N generated events (1M by default) loaded over `/batch/`, then the events list (latest 100,
 *   by event, a person's events, a property filter), csv and Parquet exports, disk per million.
 *
 * Medians over rounds with their spread; the server's RSS and other processes' CPU sampled
 * throughout (a warning when the machine was busy). With `--target URL` the HTTP cases run against
 * that server instead (keys from the environment: `_target.ts`).
 */

/** The phase of starting servers: not a measurement, and their first CPU ticks may count as other processes'. */
const SETUP = 'starting servers';

const bench: Benchmark = async (ctx) => {
  const { options, quick } = ctx;
  const spawned = options.target === null;
  const remote = options.target !== null && !isLoopbackHost(new URL(options.target).hostname);
  if (remote) allowRemoteHost(options.target!);
  const sampler = startSampler();
  const problems: string[] = [];
  const children: Child[] = [];
  const samples: HeadlineSamples = { single: null, batch: null, decide: null, dataset: null };
  let version: string | null = null;
  let timeline: TimelineSample[] = [];
  try {
    sampler.setPhase(SETUP);
    const baselines = remote ? null : { bare: await spawnBareServer(), floor: await spawnDurableFloorServer(1) };
    if (baselines) for (const b of [baselines.bare, baselines.floor]) children.push(b), sampler.addOurs(b.pid);
    let target: ServerTarget;
    let server: Child | null = null;
    if (spawned) {
      server = await startWatched(sampler, children);
      target = spawnedTarget(server.url);
    } else {
      target = await resolveTarget(options.target!);
      watchTarget(sampler, target.url);
    }
    version = await serverVersion(target.url);
    const env: HeadlineEnv = { options, quick, spawned, target, baselines, sampler, problems, log: ctx.log };
    const cases = ingestCases(quick, target.projectKey);
    samples.single = await measureIngest(env, cases.single);
    samples.batch = await measureIngest(env, cases.batch);
    samples.decide = await measureDecide(env);
    for (const b of baselines ? [baselines.bare, baselines.floor] : []) await b.stop();
    // The events list, exports and disk on a server holding only the generated events.
    if (server) {
      sampler.setPhase(SETUP);
      await server.stop();
      server = await startWatched(sampler, children);
      env.target = spawnedTarget(server.url);
    }
    samples.dataset = await measureDataset(env, server?.dataDir ?? null);
  } finally {
    timeline = await sampler.stop();
    for (const c of children) await c.stop().catch(() => undefined);
  }

  const { figures, throughput, latency } = buildFigures(samples);
  const busy = busyReport(timeline, availableParallelism(), [SETUP]);
  const notes = [
    `${options.rounds} rounds of about ${options.seconds} s per load case and server, interleaved (bare, durable floor, hogbase); medians, spread = lowest–highest round. Events list: ${Math.max(5, options.rounds * 2)} requests per case after a warm-up; exports: ${Math.min(3, options.rounds)} rounds each.`,
    'acknowledged: events answered 200 per second of load (durable mode: after the fsync). queryable: the same events over the load plus the wait until the events API counted all of them.',
    'bare Bun.serve: reads and parses the body, answers {"status":1}. durable floor: the same plus a log append and a group-commit fdatasync before the 200, nothing else: the ceiling of a server that answers only once the events are on disk.',
    'the load generator (autocannon, in the bench process) runs on the same machine, and on a 2-core machine takes about a core itself.',
    spawned
      ? 'the server was started by the bench with its defaults (a fresh DATA_DIR); the events list, exports and disk use a second fresh server holding only the generated events.'
      : `measured against ${options.target}: its events, persons and flags of this run stay in its project (the bench's flags are soft-deleted); ${remote ? 'no floors (they would be this machine\'s, not the target\'s).' : 'floors measured on this machine.'}`,
    ...(busy.warning ? [`WARNING: ${busy.warning}`] : []),
    ...problems.map((p) => `PROBLEM: ${p}`),
  ];
  return {
    name: 'headline',
    rows: figureRows(figures),
    notes,
    headline: {
      options: { ...options, quick },
      server: {
        mode: spawned ? 'spawned' : 'target',
        url: spawned ? null : options.target,
        durability: spawned ? (process.env.DURABILITY ?? 'durable') : 'as configured on the target (not visible over HTTP)',
        version,
      },
      figures,
      throughput,
      latency,
      timeline,
      busy,
    },
  };
};

async function startWatched(sampler: Sampler, children: Child[]): Promise<Child> {
  const server = await spawnRealServer();
  children.push(server);
  sampler.addOurs(server.pid);
  sampler.watch({ pid: server.pid, metricsUrl: null, own: true });
  return server;
}

/** A loopback target's process is found by its port: its memory and CPU are then read from /proc. */
function watchTarget(sampler: Sampler, url: string) {
  const u = new URL(url);
  const pid = isLoopbackHost(u.hostname) ? findListeningPid(Number(u.port || (u.protocol === 'https:' ? 443 : 80))) : null;
  if (pid !== null) sampler.addOurs(pid);
  sampler.watch({ pid, metricsUrl: `${url}/metrics`, own: false });
}

async function serverVersion(url: string): Promise<string | null> {
  const text = await fetch(`${url}/metrics`).then((r) => (r.ok ? r.text() : ''), () => '');
  return /^hogbase_build_info\{version="([^"]+)"\}/m.exec(text)?.[1] ?? null;
}

export default bench;
