import { FLAGS, bodies, seedPersons, users } from './decide';
import { peakRssMb, resetPeakRss } from './_ingest-procs';
import { timedRun, type IngestCase } from './_headline-ingest';
import { targetJson } from './_target';
import type { HeadlineEnv, LoadSample, ServerSamples } from './_headline-types';

/**
 * `/decide/?v=2` with the decide bench's 20 flags (rollouts, multivariate, person-property
 * conditions) and 400 users whose persons are stored first, 64 connections, next to the bare
 * server parsing the same bodies. On a `--target` the flags get a `hogbase-bench-` prefix and are
 * soft-deleted afterwards; the users' `$identify` events stay, like the capture rounds' events.
 */

export async function measureDecide(env: HeadlineEnv): Promise<ServerSamples> {
  const spawned = env.spawned;
  const prefix = spawned ? '' : 'hogbase-bench-';
  const created: number[] = [];
  env.sampler.setPhase('decide');
  try {
    for (const flag of FLAGS) {
      const r = await targetJson(env.target, 'POST', `/api/projects/${env.target.projectId}/feature_flags/`, { ...flag, key: prefix + flag.key });
      if (r.status !== 201) throw new Error(`creating flag ${prefix + flag.key}: ${r.status} ${JSON.stringify(r.body)}`);
      created.push(r.body.id);
    }
    const people = users();
    const seeded = await seedPersons(env.target.url, people, env.target.projectKey);
    if (!seeded) env.problems.push('decide: the persons could not be stored through /batch/: requests carry their properties');
    const c: IngestCase = {
      name: '/decide/ 20 flags',
      path: '/decide/?v=2',
      connections: 64,
      bodies: bodies(people, seeded, env.target.projectKey).map((b) => ({ body: Buffer.from(b), events: 1 })),
    };
    // Flag checks wait (at most 0.5 s) for their user's logged events: let the persons land first.
    await Bun.sleep(1000);
    type Server = ['bare' | 'real', string, number | null];
    const servers: Server[] = [...(env.baselines ? [['bare', env.baselines.bare.url, env.baselines.bare.pid] as Server] : []), ['real', env.target.url, null]];
    const amounts = new Map<string, number>();
    for (const [label, url] of servers) {
      const warm = await timedRun(env, `${c.name} warm-up ${label}`, url, c, c.connections * (env.quick ? 20 : 50));
      amounts.set(label, Math.max(c.connections * 4, Math.round(warm.rps * env.options.seconds)));
    }
    const out: ServerSamples = {};
    for (let round = 1; round <= env.options.rounds; round++) {
      for (const [label, url, pid] of servers) {
        if (pid !== null) resetPeakRss(pid);
        else env.sampler.resetPeak();
        const run = await timedRun(env, `${c.name} round ${round}/${env.options.rounds} ${label}`, url, c, amounts.get(label)!);
        const sample: LoadSample = {
          rps: run.rps,
          eps: run.eps,
          p50: run.p50,
          p90: run.p90 ?? null,
          p99: run.p99,
          peakMb: pid !== null ? peakRssMb(pid) : await env.sampler.peakMb(),
          queryableS: null,
          queryableEps: null,
          errors: run.non200 + run.errors,
        };
        (out[label] ??= []).push(sample);
        env.log(`${c.name} round ${round} ${label}: ${Math.round(run.rps).toLocaleString('en-US')} req/s, p50 ${run.p50} ms, p99 ${run.p99} ms${sample.errors ? `, ${sample.errors} not 200` : ''}`);
      }
    }
    return out;
  } finally {
    if (!spawned) {
      for (const id of created) await targetJson(env.target, 'PATCH', `/api/projects/${env.target.projectId}/feature_flags/${id}/`, { deleted: true }).catch(() => undefined);
    }
  }
}
