import { BENCH_KEYS, apiJson, median, runLoad, startBareServer, startRealServer, type LoadRequest, type LoadResult } from './_http';
import type { BenchRow, Benchmark } from './types';
import { seeded } from './_events';

/**
 * `/decide/?v=2` and `/flags/?v=2` of the real server with 20 flags (rollouts, multivariate,
 * person-property conditions), 64 connections, next to a bare Bun.serve that only parses the same
 * JSON. Runs are interleaved and repeated; medians and ratios are reported.
 */

const USERS = 400;
const PLANS = ['free', 'pro', 'enterprise'];

const rollout = (key: string, pct: number) => ({ key, filters: { groups: [{ properties: [], rollout_percentage: pct }] } });

const multivariate = (key: string, pct: number) => ({
  key,
  filters: {
    groups: [{ properties: [], rollout_percentage: pct }],
    multivariate: {
      variants: [
        { key: 'control', rollout_percentage: 50 },
        { key: 'test-a', rollout_percentage: 25 },
        { key: 'test-b', rollout_percentage: 25 },
      ],
    },
    payloads: { control: '{"color":"blue"}', 'test-a': '{"color":"red"}' },
  },
});

const personFlag = (key: string, properties: unknown[], pct: number | null = null) => ({
  key,
  filters: { groups: [{ properties, rollout_percentage: pct }, { properties: [{ key: 'plan', type: 'person', value: 'enterprise', operator: 'exact' }], rollout_percentage: null }] },
});

export const FLAGS = [
  ...[5, 10, 25, 33, 50, 66, 80, 100].map((pct, i) => rollout(`rollout-${i}`, pct)),
  ...[20, 50, 75, 100, 100, 60].map((pct, i) => multivariate(`experiment-${i}`, pct)),
  personFlag('email-domain', [{ key: 'email', type: 'person', value: '@example.com', operator: 'icontains' }]),
  personFlag('paid-plans', [{ key: 'plan', type: 'person', value: ['pro', 'enterprise'], operator: 'exact' }], 50),
  personFlag('adults', [{ key: 'age', type: 'person', value: '18', operator: 'gte' }]),
  personFlag('has-country', [{ key: 'country', type: 'person', operator: 'is_set', value: 'is_set' }], 30),
  personFlag('chrome-users', [{ key: '$browser', type: 'person', value: 'Chrome', operator: 'exact' }]),
  personFlag('not-free', [{ key: 'plan', type: 'person', value: 'free', operator: 'is_not' }], 75),
];

export function users() {
  const rand = seeded(7);
  return Array.from({ length: USERS }, (_, i) => ({
    distinctId: `user-${i}-${Math.floor(rand() * 1e9).toString(36)}`,
    properties: {
      email: `user${i}@${rand() < 0.5 ? 'example.com' : 'other.org'}`,
      plan: PLANS[Math.floor(rand() * PLANS.length)],
      age: 10 + Math.floor(rand() * 60),
      ...(rand() < 0.7 && { country: 'NL' }),
      $browser: rand() < 0.6 ? 'Chrome' : 'Firefox',
    },
  }));
}

/** Persons through `/batch/` when capture is wired; otherwise requests carry the properties. */
export async function seedPersons(url: string, people: ReturnType<typeof users>, token: string = BENCH_KEYS.project): Promise<boolean> {
  const batch = people.map((p) => ({ event: '$identify', distinct_id: p.distinctId, properties: { $set: p.properties } }));
  const response = await fetch(`${url}/batch/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ api_key: token, batch }),
  }).catch(() => null);
  return response?.status === 200;
}

/** What posthog-node sends: half the users with `person_properties`, the rest relying on stored persons. */
export function bodies(people: ReturnType<typeof users>, seededPersons: boolean, token: string = BENCH_KEYS.project): string[] {
  return people.map((p, i) =>
    JSON.stringify({
      token,
      distinct_id: p.distinctId,
      groups: {},
      person_properties: !seededPersons || i % 2 ? { distinct_id: p.distinctId, ...p.properties } : { distinct_id: p.distinctId },
      group_properties: {},
      geoip_disable: true,
    }),
  );
}

const row = (name: string, runs: LoadResult[], bare: number | null): BenchRow => {
  const rps = median(runs.map((r) => r.rps));
  return {
    case: name,
    'req/s': Math.round(rps),
    'p50 ms': median(runs.map((r) => r.p50)),
    'p99 ms': median(runs.map((r) => r.p99)),
    'vs bare': bare ? Number((rps / bare).toFixed(3)) : null,
    'errors+non2xx': runs.reduce((n, r) => n + r.errors + r.non2xx, 0),
  };
};

const bench: Benchmark = async (ctx) => {
  const durationS = ctx.quick ? 2 : 8;
  const rounds = ctx.quick ? 1 : 3;
  // The server's own warnings and errors are echoed, so a failing run says why. SRC_ROOT runs
  // another checkout (an A/B of a change against the same bare baseline).
  const server = await startRealServer({}, { echoStderr: true, root: process.env.SRC_ROOT });
  const bare = await startBareServer();
  try {
    for (const flag of FLAGS) {
      const created = await apiJson(server.url, 'POST', '/api/projects/@current/feature_flags/', flag);
      if (created.status !== 201) throw new Error(`creating ${flag.key}: ${created.status} ${JSON.stringify(created.body)}`);
    }
    const people = users();
    const seededPersons = await seedPersons(server.url, people);
    ctx.log(`${FLAGS.length} flags; persons ${seededPersons ? 'stored through /batch/' : 'not stored (/batch/ unavailable): properties in the request'}`);
    const payloads = bodies(people, seededPersons);
    let fresh = 0;
    const newUser = () => {
      const p = people[fresh % USERS];
      return JSON.stringify({ token: BENCH_KEYS.project, distinct_id: `new-${fresh++}`, person_properties: p.properties, geoip_disable: true });
    };
    const cases: Record<string, { url: string; requests: LoadRequest[] }> = {
      'bare Bun.serve (parse JSON)': { url: bare.url, requests: payloads.map((body) => ({ path: '/', body })) },
      'POST /decide/?v=2': { url: server.url, requests: payloads.map((body) => ({ path: '/decide/?v=2', body })) },
      'POST /flags/?v=2': { url: server.url, requests: payloads.map((body) => ({ path: '/flags/?v=2', body })) },
      // Every request a user never seen: no remembered results, the evaluator's full cost.
      'POST /flags/?v=2, new user each time': { url: server.url, requests: [{ path: '/flags/?v=2', body: newUser(), makeBody: newUser }] },
    };
    // Warm up both processes (JIT, person load) before measuring.
    for (const { url, requests } of Object.values(cases)) await runLoad(url, requests, { durationS: 1 });
    const results: Record<string, LoadResult[]> = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
    for (let round = 0; round < rounds; round++) {
      for (const [name, { url, requests }] of Object.entries(cases)) {
        const result = await runLoad(url, requests, { durationS, connections: 64 });
        if (server.proc.exitCode !== null || server.proc.signalCode !== null) {
          throw new Error(`the server under test exited during "${name}" (code ${server.proc.exitCode}, signal ${server.proc.signalCode})`);
        }
        results[name].push(result);
        ctx.log(`round ${round + 1} ${name}: ${Math.round(result.rps)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms`);
      }
    }
    const bareRps = median(results['bare Bun.serve (parse JSON)'].map((r) => r.rps));
    const rows = Object.entries(results).map(([name, runs]) => row(name, runs, name.startsWith('bare') ? null : bareRps));
    return {
      name: 'decide',
      rows,
      notes: [
        `${FLAGS.length} flags, ${USERS} users cycled (results of repeat users are remembered per flag snapshot), 64 connections, ${rounds} × ${durationS} s per case (medians); target ≥ 0.6 of bare and p99 < 10 ms`,
        'autocannon runs in this process and shares the 2 cores with the server under test; bench/_decide-cpu.ts gives the handler\'s CPU per request in-process, which noise disturbs less',
      ],
    };
  } finally {
    await server.stop();
    await bare.stop();
  }
};

export default bench;
