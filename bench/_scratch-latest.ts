import { loadConfig } from '../src/config';
import { createAppMetrics } from '../src/metrics';
import { silentLogger } from '../src/logger';
import { withPipeline } from '../src/pipeline';
import { openStorage, type Storage } from '../src/storage';
import { duckdbEventReads } from '../src/storage/events/read/reads';
import { createEventsService } from '../src/modules/events/service';
import type { Deps } from '../src/deps';
const dataDir = '/tmp/qb1m';
const { teamId } = JSON.parse(await Bun.file(`${dataDir}/bench-query.json`).text());
const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', QUERY_TIMEOUT_MS: '300000' });
const storage = await openStorage(withPipeline({ dataDir, personCopies: false }));
const recorded: Array<{ sql: string; params: readonly unknown[] }> = [];
const recording = new Proxy(storage.events, {
  get(target, key) {
    if (key === 'streamQuery') return (sql: string, params: any = [], options?: any) => { recorded.push({ sql, params }); return target.streamQuery(sql, params, options); };
    const value = Reflect.get(target, key);
    return typeof value === 'function' ? value.bind(target) : value;
  },
});
const deps: Deps = { config, storage: { ...storage, events: recording, eventReads: duckdbEventReads(recording) } as Storage, logger: silentLogger, version: 'bench', now: () => new Date(), metrics: createAppMetrics() };
const service = createEventsService(deps);
const q = JSON.parse(process.env.Q ?? '{}');
const url = `http://bench.local/api/projects/${teamId}/events/?${new URLSearchParams(q)}`;
for (let i = 0; i < 3; i++) { recorded.length = 0; await service.list(teamId, q, url); }
const times: number[][] = recorded.map(() => []);
const whole: number[] = [];
for (let r = 0; r < 9; r++) {
  const w0 = performance.now(); recorded.length = 0; await service.list(teamId, q, url); whole.push(performance.now() - w0);
  for (const [i, s] of recorded.entries()) { const t0 = performance.now(); let n = 0; for await (const rows of storage.events.streamQuery(s.sql, s.params as any)) n += rows.length; times[i]!.push(performance.now() - t0); }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log('whole list (service)', med(whole).toFixed(1), 'ms');
for (const [i, s] of recorded.entries()) console.log(`#${i} ${med(times[i]!).toFixed(1)} ms :: ${s.sql.replace(/\s+/g, ' ').slice(0, 700)}`);
await storage.close();
