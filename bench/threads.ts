import { readdirSync, readFileSync } from 'node:fs';
import { peakRssMb, resetPeakRss, spawnRealServer } from './_ingest-procs';
import { batchBodies, captureBodies } from './_ingest-payloads';
import { cannon, wrk } from './_ingest-runner';
import { quantile } from './_stats';
import { spawnedTarget, waitForCount } from './_target';
import type { BenchRow, Benchmark } from './types';

/**
 * Where the CPU of a stored event goes, by thread, on the path production runs: the real server
 * (durable) under ~1 MB `/batch/` bodies (4 connections, autocannon) and single `/capture/`
 * events (64 connections, wrk), each thread's CPU read from /proc before and after a round. The
 * threads are grouped by name: the main thread (HTTP, the log, persons), the parser thread (parse,
 * normalize, encode), Bun's thread pool (DuckDB's loads and queries, file I/O) and the rest
 * (garbage collection, JIT, the allocator). CPU an event over the stored rate is what bounds
 * the rate on a machine whose cores are all busy: the figures to read next to the ingest bench.
 */
const bench: Benchmark = async (ctx) => {
  const seconds = ctx.quick ? 2 : 20;
  const rounds = ctx.quick ? 1 : 3;
  const json = { 'content-type': 'application/json' };
  const cases = [
    { name: 'POST /batch/ ~1 MB, 4 connections [autocannon]', path: '/batch/', bodies: batchBodies(ctx.quick ? 2 : 6, 1_000_000, { gzip: false, seed: 23 }), single: false },
    { name: 'POST /capture/ single, 64 connections [wrk]', path: '/capture/', bodies: captureBodies(ctx.quick ? 500 : 4000), single: true },
  ];
  const rows: BenchRow[] = [];
  for (const c of cases) {
    const perRound: Array<Record<string, number>> = [];
    for (let round = 0; round < rounds; round++) {
      const server = await spawnRealServer();
      try {
        resetPeakRss(server.pid);
        const before = threadCpu(server.pid);
        const run = c.single
          ? await wrk(server.url, { path: c.path, bodies: c.bodies, headers: json }, { durationS: seconds, connections: 64, threads: 2 })
          : await cannon(server.url, { path: c.path, bodies: c.bodies, headers: json }, { connections: 4, amount: 10_000_000, maxSeconds: seconds });
        const seen = await waitForCount(spawnedTarget(server.url), run.ackedEvents, 0, 120_000);
        const after = threadCpu(server.pid);
        const us = (group: string) => ((after.get(group)?.seconds ?? 0) - (before.get(group)?.seconds ?? 0)) / run.ackedEvents * 1e6;
        const faults = [...after].reduce((n, [group, t]) => n + t.faults - (before.get(group)?.faults ?? 0), 0) / run.ackedEvents;
        const figures: Record<string, number> = {
          'acknowledged events/s': run.ackedEvents / run.seconds,
          'stored events/s': run.ackedEvents / (run.seconds + seen.seconds),
          'main µs/event': us('main'),
          'parser µs/event': us('parser'),
          'pool µs/event': us('pool'),
          'other µs/event': us('other'),
          'peak RSS MB': peakRssMb(server.pid) ?? Number.NaN,
          'page faults/event': faults,
        };
        figures['all µs/event'] = figures['main µs/event'] + figures['parser µs/event'] + figures['pool µs/event'] + figures['other µs/event'];
        perRound.push(figures);
        ctx.log(`   round ${round + 1} ${c.name}: ${Object.entries(figures).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(', ')}`);
      } finally {
        await server.stop();
      }
    }
    const row: BenchRow = { case: c.name };
    for (const key of Object.keys(perRound[0])) row[key] = Math.round((quantile(perRound.map((f) => f[key]), 0.5) ?? Number.NaN) * 10) / 10;
    rows.push(row);
  }
  return {
    name: 'threads',
    rows,
    notes: [
      `${rounds} round(s) of ${seconds} s per case, a fresh real server (durable) each; medians`,
      'µs/event: the thread group\'s CPU (user + system, /proc/<pid>/task) from the load\'s start until the events API counts every acknowledged event (the catch-up and the count\'s polls included), over the events acknowledged; stored events/s: acknowledged events over the load plus that wait',
      'main: the process\'s first thread; parser: the ingest worker threads; pool: Bun\'s thread pool (DuckDB, file I/O); other: GC, JIT, allocator and the rest',
      'page faults/event: minor page faults of all the threads over the events acknowledged (memory the allocators gave back and took again costs one each: MIMALLOC_PURGE_DELAY in README, Memory)',
    ],
  };
};

export default bench;

/** CPU seconds and minor page faults so far of each thread group of process `pid`. */
function threadCpu(pid: number): Map<string, { seconds: number; faults: number }> {
  const out = new Map<string, { seconds: number; faults: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const seconds = (Number(fields[11]) + Number(fields[12])) / 100;
    const group = tid === String(pid) ? 'main' : name === 'Worker' ? 'parser' : name.startsWith('Bun Pool') ? 'pool' : 'other';
    const sum = out.get(group) ?? { seconds: 0, faults: 0 };
    out.set(group, { seconds: sum.seconds + seconds, faults: sum.faults + Number(fields[7]) });
  }
  return out;
}
