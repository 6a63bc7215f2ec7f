// A/B of proposed server changes: the same load on server copies (each its own root), interleaved,
// medians of core-µs/event (CPU of the server process per acknowledged event), req/s and peak RSS.
// `bun bench/_ingest-ab.ts name=/root name2=/root2 ...` (ROUNDS, SECONDS env).
import { batchBodies, captureBodies } from './_ingest-payloads';
import { cpuSeconds, peakRssMb, resetPeakRss, spawnRealServer, type Child } from './_ingest-procs';
import { cannon, wrk, type CannonCase, type RunResult } from './_ingest-runner';
const variants = process.argv.slice(2).map((a) => a.split('=') as [string, string]);
const rounds = Number(process.env.ROUNDS ?? 3);
const seconds = Number(process.env.SECONDS ?? 8);
const cases: Array<{ name: string; c: CannonCase; single: boolean }> = [
  { name: 'single /capture/ (wrk 64c)', single: true, c: { path: '/capture/', bodies: captureBodies(4000), headers: { 'content-type': 'application/json' } } },
  { name: 'batch ~100 KB (autocannon 16c)', single: false, c: { path: '/batch/', bodies: batchBodies(24, 100_000, { gzip: false, seed: 21 }), headers: { 'content-type': 'application/json' } } },
];
const median = (v: number[]) => { const s = [...v].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const servers: Array<[string, Child]> = [];
for (const [name, root] of variants) servers.push([name, await spawnRealServer({}, root)]);
const res = new Map<string, { eps: number[]; cpu: number[]; p99: number[]; rss: number[] }>();
const run = (s: Child, k: (typeof cases)[number], sec: number): Promise<RunResult> =>
  k.single ? wrk(s.url, k.c, { durationS: sec, connections: 64, threads: 1 }) : cannon(s.url, k.c, { amount: Math.round(200 * sec), connections: 16, maxSeconds: sec * 4 });
try {
  for (const k of cases) for (const [, s] of servers) await run(s, k, 2);
  for (let r = 0; r < rounds; r++) {
    for (const k of cases) {
      for (const [name, s] of (r % 2 ? [...servers].reverse() : servers)) {
        resetPeakRss(s.pid);
        const c0 = cpuSeconds(s.pid)!;
        const out = await run(s, k, seconds);
        const cpu = ((cpuSeconds(s.pid)! - c0) * 1e6) / out.ackedEvents;
        const key = `${k.name} | ${name}`;
        const e = res.get(key) ?? { eps: [], cpu: [], p99: [], rss: [] };
        res.set(key, e);
        e.eps.push(out.eps); e.cpu.push(cpu); e.p99.push(out.p99); e.rss.push(peakRssMb(s.pid) ?? 0);
        console.log(`round ${r + 1} ${key}: ${Math.round(out.eps)} events/s, ${cpu.toFixed(1)} core-µs/event, p99 ${out.p99.toFixed(1)} ms, peak RSS ${peakRssMb(s.pid)} MB, non-200 ${out.non200}`);
      }
    }
  }
  console.log('\ncase | variant | events/s (median) | core-µs/event (median) | p99 ms | max peak RSS MB');
  for (const [key, e] of res) console.log(`${key} | ${Math.round(median(e.eps))} | ${median(e.cpu).toFixed(1)} | ${median(e.p99).toFixed(1)} | ${Math.max(...e.rss)}`);
} finally {
  for (const [, s] of servers) await s.stop();
}
