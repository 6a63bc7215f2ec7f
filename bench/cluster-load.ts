import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readState } from '../src/cli/cluster/processes';
import { chQuery, cluster, eventually, shardUrls, summaryOf } from '../test/helpers/cluster';

/**
 * The local cluster under a load (`bun bench/cluster-load.ts [events] [per-request] [in-flight]`):
 * `cluster up`, then SDK-shaped /batch/ requests to both nodes, and what each role spent. Prints
 * capture throughput (acknowledged events/s), end-to-end throughput (until every event is in
 * ClickHouse: one writer), and CPU per event of each process (utime+stime from /proc). On a
 * 2-core machine every process shares the same two cores: this sizes roles, it shows no scaling.
 */
const [EVENTS = 100_000, PER_REQUEST = 100, IN_FLIGHT = 8] = process.argv.slice(2).map(Number);
const TICK = 100; // USER_HZ on Linux

const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICK;
};

const dir = mkdtempSync(join(tmpdir(), 'hogbase-cluster-bench-'));
try {
  const started = await cluster('up', dir);
  if (started.code !== 0) throw new Error(started.stderr);
  const up = summaryOf(started.stdout);
  const shards = shardUrls(dir);
  const state = readState(dir)!;
  const procs = Object.entries(state.pids).flatMap(([role, list]) => list.map((p, i) => ({ name: `${role}[${i}]`, pid: p.pid })));
  const props = { $browser: 'Chrome', $os: 'Linux', $current_url: 'https://example.com/pricing?utm_source=bench', plan: 'pro', path: '/pricing', n: 0 };
  const body = (n: number) => JSON.stringify({
    api_key: up.project_api_key,
    batch: Array.from({ length: PER_REQUEST }, (_, i) => ({ event: '$pageview', distinct_id: `u-${(n * PER_REQUEST + i) % 5000}`, uuid: crypto.randomUUID(), timestamp: new Date().toISOString(), properties: { ...props, n: i } })),
  });
  const requests = Math.ceil(EVENTS / PER_REQUEST);
  const cpu0 = procs.map((p) => cpuMs(p.pid));
  const t0 = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next < requests) {
      const n = next++;
      const answer = await fetch(`${up.nodes[n % 2]}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(n) });
      if (answer.status !== 200) throw new Error(`capture ${answer.status}: ${await answer.text()}`);
    }
  }));
  const acked = performance.now() - t0;
  const total = requests * PER_REQUEST;
  const count = () => chQuery(shards[0]!, `SELECT count() FROM events WHERE team_id = ${up.project_id}`).then(Number);
  await eventually(count, (n) => n >= total, 600_000);
  const stored = performance.now() - t0;
  const cpu = procs.map((p, i) => ({ name: p.name, us_per_event: Math.round(((cpuMs(p.pid) - cpu0[i]!) * 1000) / total * 10) / 10 }));
  console.log(JSON.stringify({ events: total, per_request: PER_REQUEST, in_flight: IN_FLIGHT, capture_events_per_s: Math.round(total / (acked / 1000)), end_to_end_events_per_s: Math.round(total / (stored / 1000)), acked_s: +(acked / 1000).toFixed(1), stored_s: +(stored / 1000).toFixed(1), cpu }, null, 1));
} finally {
  await cluster('down', dir);
  rmSync(dir, { recursive: true, force: true });
}
