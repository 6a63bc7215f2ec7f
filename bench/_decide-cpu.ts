// In-process CPU cost of one flag check (µs per request through app.handle, no socket), next to
// a bare handler that reads and parses the same body: robust to a noisy machine, unlike req/s.
// `bun bench/_decide-cpu.ts [N]` (CASE="POST /flags/?v=2|..." picks cases; run it under
// `--cpu-prof-md` to profile the handler). SRC_ROOT: another checkout's root (A/B), default this one.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BENCH_KEYS } from './_http';
import { FLAGS, bodies, users } from './decide';
import { withPipeline } from '../src/pipeline';

const root = resolve(process.env.SRC_ROOT ?? join(import.meta.dir, '..'));
const { createApp } = await import(`${root}/src/app.ts`);
const { bootstrap } = await import(`${root}/src/bootstrap.ts`);
const { loadConfig } = await import(`${root}/src/config.ts`);
const { silentLogger } = await import(`${root}/src/logger.ts`);
const { openStorage } = await import(`${root}/src/storage/index.ts`);

const N = Number(process.argv[2] ?? 20_000);
const dir = mkdtempSync(join(tmpdir(), 'decide-cpu-'));
const config = loadConfig({
  LOG_LEVEL: 'silent', DATA_DIR: dir,
  BOOTSTRAP_EMAIL: BENCH_KEYS.email, BOOTSTRAP_PERSONAL_API_KEY: BENCH_KEYS.personal, BOOTSTRAP_PROJECT_API_KEY: BENCH_KEYS.project,
});
const storage = await openStorage(withPipeline({ dataDir: dir, durability: config.DURABILITY }));
await bootstrap(storage, config);
const app = createApp({ config, storage, logger: silentLogger, version: 'bench', now: () => new Date() });
const call = (method: string, path: string, body: string, headers: Record<string, string> = {}) =>
  app.handle(new Request(`http://127.0.0.1${path}`, { method, body, headers: { 'content-type': 'application/json', ...headers } }));
for (const flag of FLAGS) {
  const r = await call('POST', '/api/projects/@current/feature_flags/', JSON.stringify(flag), { authorization: `Bearer ${BENCH_KEYS.personal}` });
  if (r.status !== 201) throw new Error(`flag ${flag.key}: ${r.status}`);
}
const people = users();
const batch = people.map((p) => ({ event: '$identify', distinct_id: p.distinctId, properties: { $set: p.properties } }));
const seeded = (await call('POST', '/batch/', JSON.stringify({ api_key: BENCH_KEYS.project, batch }))).status === 200;
const payloads = bodies(people, seeded);
let fresh = 0;
const newUser = () =>
  JSON.stringify({ token: BENCH_KEYS.project, distinct_id: `new-${fresh++}`, person_properties: people[fresh % people.length].properties, geoip_disable: true });

const bare = async (request: Request) => {
  JSON.parse(await request.text());
  return new Response('{"status":1}', { headers: { 'content-type': 'application/json' } });
};

const only = process.env.CASE;
/** CPU per request of the best of five batches: other load on the machine only ever adds. */
async function measure(label: string, send: (i: number) => Promise<Response>) {
  if (only && !only.split('|').includes(label)) return;
  for (let i = 0; i < 2000; i++) await (await send(i)).text(); // warm-up
  const batches: number[] = [];
  let sent = 0;
  for (let batch = 0; batch < 5; batch++) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < N / 5; i++, sent++) {
      const response = await send(sent);
      if (response.status !== 200) throw new Error(`${label}: ${response.status} ${await response.text()}`);
      await response.text();
    }
    const c = process.cpuUsage(c0);
    batches.push((c.user + c.system) / (N / 5));
  }
  batches.sort((a, b) => a - b);
  console.log(`${label.padEnd(36)} ${batches[0].toFixed(2)} core-µs/req (best of 5; median ${batches[2].toFixed(2)})`);
}

console.log(`${FLAGS.length} flags, ${people.length} users, persons ${seeded ? 'stored' : 'in the request'}, N=${N}`);
// Real clients declare the length, which lets the body be read in one go.
const req = (path: string, body: string) =>
  new Request(`http://127.0.0.1${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } });
await measure('bare (parse JSON)', (i) => bare(req('/', payloads[i % payloads.length])));
await measure('POST /decide/?v=2', (i) => app.handle(req('/decide/?v=2', payloads[i % payloads.length])));
await measure('POST /flags/?v=2', (i) => app.handle(req('/flags/?v=2', payloads[i % payloads.length])));
await measure('POST /flags/?v=2, new user each time', () => app.handle(req('/flags/?v=2', newUser())));
await storage.close();
rmSync(dir, { recursive: true, force: true });
