import { batchBodies, captureBodies, type Body } from './_ingest-payloads';
import { peakRssMb, resetPeakRss } from './_ingest-procs';
import { cannon, type RunResult } from './_ingest-runner';
import { startProgress } from './_progress';
import { countEvents, waitForCount } from './_target';
import type { HeadlineEnv, LoadSample, ServerSamples } from './_headline-types';

/**
 * The headline's ingestion cases against the server under test, next to the bare server and
 * the durable floor, interleaved round by round: single events on `/capture/` (64 connections)
 * and ~1 MB `/batch/` bodies (4 connections). autocannon in amount mode, so every request sent is
 * answered before a run ends and the acknowledged count is exact; after each of the server's
 * runs, the events API must count every acknowledged event: the wait is "queryable after".
 */

export interface IngestCase {
  name: string;
  path: string;
  connections: number;
  bodies: Body[];
}

export function ingestCases(quick: boolean, token: string): { single: IngestCase; batch: IngestCase } {
  return {
    single: { name: 'capture single', path: '/capture/', connections: 64, bodies: captureBodies(quick ? 1000 : 4000, 41, token) },
    batch: { name: '1 MB batches', path: '/batch/', connections: 4, bodies: batchBodies(6, 1_000_000, { gzip: false, seed: 42, token }) },
  };
}

const HEADERS = { 'content-type': 'application/json' };

/** One bounded run with a progress display; `amount` requests. */
export async function timedRun(env: HeadlineEnv, label: string, url: string, c: IngestCase, amount: number): Promise<RunResult> {
  const progress = startProgress(label, amount, 'requests');
  try {
    return await cannon(url, { path: c.path, bodies: c.bodies, headers: HEADERS }, {
      amount,
      connections: c.connections,
      maxSeconds: Math.max(30, env.options.seconds * 4),
      onResponse: (n) => progress.update(n),
    });
  } finally {
    progress.finish();
  }
}

const sampleOf = (run: RunResult, peakMb: number | null, queryableS: number | null = null): LoadSample => ({
  rps: run.rps,
  eps: run.eps,
  p50: run.p50,
  p90: run.p90 ?? null,
  p99: run.p99,
  peakMb,
  queryableS,
  queryableEps: queryableS === null ? null : run.ackedEvents / (run.seconds + queryableS),
  errors: run.non200 + run.errors,
});

export async function measureIngest(env: HeadlineEnv, c: IngestCase): Promise<ServerSamples> {
  const { options } = env;
  const events = c.bodies[0].events;
  type Server = ['bare' | 'floor' | 'real', string, number | null];
  const baselines: Server[] = env.baselines
    ? [
        ['bare', env.baselines.bare.url, env.baselines.bare.pid],
        ['floor', env.baselines.floor.url, env.baselines.floor.pid],
      ]
    : [];
  const servers: Server[] = [...baselines, ['real', env.target.url, null]];
  const before = await countEvents(env.target);
  if (before === null) throw new Error(`the events API of ${env.target.url} does not answer`);
  let acked = 0;
  let unknown = 0;
  const amounts = new Map<string, number>();
  env.sampler.setPhase(c.name);
  for (const [label, url] of servers) {
    const warm = await timedRun(env, `${c.name} warm-up ${label}`, url, c, c.connections * (events > 1 ? 2 : env.quick ? 15 : 40));
    if (label === 'real') {
      acked += warm.ackedEvents;
      unknown += warm.indeterminate * events;
    }
    amounts.set(label, Math.max(c.connections * 2, Math.round(warm.rps * options.seconds)));
  }
  await waitForCount(env.target, before + acked, unknown, 120_000);
  const out: ServerSamples = {};
  for (let round = 1; round <= options.rounds; round++) {
    for (const [label, url, pid] of servers) {
      if (pid !== null) resetPeakRss(pid);
      else env.sampler.resetPeak();
      const run = await timedRun(env, `${c.name} round ${round}/${options.rounds} ${label}`, url, c, amounts.get(label)!);
      let queryableS: number | null = null;
      if (label === 'real') {
        acked += run.ackedEvents;
        unknown += run.indeterminate * events;
        const seen = await waitForCount(env.target, before + acked, unknown, 120_000);
        if (seen.count === null || seen.count < before + acked) env.problems.push(`${c.name} round ${round}: the events API counts ${seen.count}, ${before + acked} expected`);
        queryableS = seen.seconds;
      }
      const sample = sampleOf(run, pid !== null ? peakRssMb(pid) : await env.sampler.peakMb(), queryableS);
      (out[label] ??= []).push(sample);
      env.log(
        `${c.name} round ${round} ${label}: ${Math.round(sample.eps).toLocaleString('en-US')} events/s acknowledged` +
          (sample.queryableEps !== null ? `, ${Math.round(sample.queryableEps).toLocaleString('en-US')} queryable (after ${queryableS!.toFixed(2)} s)` : '') +
          `, p50 ${sample.p50} ms, p99 ${sample.p99} ms, peak RSS ${sample.peakMb} MB${sample.errors ? `, ${sample.errors} not 200` : ''}`,
      );
    }
  }
  return out;
}
