// Per-stage CPU of the ingest path, in-process (no HTTP): µs per event for each step a capture
// request goes through (capture's decode, then the pipeline's prepareRows and applyRows), on the
// same bodies the ingest bench sends. Wall time of this one thread over many repetitions. `bun bench/_ingest-cpu.ts [single|batch]`.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { captureBodies, batchBodies } from './_ingest-payloads';

// SRC_ROOT: another checkout's root (an A/B of a proposed change), default this one.
const root = resolve(process.env.SRC_ROOT ?? join(import.meta.dir, '..'));
const { decodePayload } = await import(`${root}/src/core/ingest/decode-payload.ts`);
const { extractEvents } = await import(`${root}/src/core/ingest/extract-events.ts`);
const { prepareRows, withPipeline } = await import(`${root}/src/pipeline/index.ts`);
const { createRowApplier } = await import(`${root}/src/pipeline/apply-rows.ts`);
const { openStorage } = await import(`${root}/src/storage/index.ts`);
const { uuidv7 } = await import(`${root}/src/ids.ts`);

const kind = process.argv[2] ?? 'single';
const bodies = kind === 'single' ? captureBodies(4000) : batchBodies(40, 100_000, { gzip: false });
const dir = mkdtempSync(join(tmpdir(), 'ingest-cpu-'));
const storage = await openStorage(withPipeline({ dataDir: dir }));
await storage.persons.ensureLoaded(1);
const applyRows = createRowApplier(storage.persons, storage.seen);
const query = new URLSearchParams();
const t: Record<string, number> = {};
const add = (k: string, ms: number) => (t[k] = (t[k] ?? 0) + ms);
let events = 0;
const ROUNDS = kind === 'single' ? 10 : 5;
for (let round = 0; round < ROUNDS; round++) {
  if (round === 2) { for (const k in t) t[k] = 0; events = 0; } // warm-up rounds not counted
  for (const b of bodies) {
    let c = performance.now();
    const lap = (k: string) => { const n = performance.now(); add(k, n - c); c = n; };
    const decoded = decodePayload({ body: b.body, contentType: 'application/json', contentEncoding: null, query, maxBytes: 20 << 20 });
    lap('decode (utf8 + JSON.parse)');
    const extracted = extractEvents(decoded.payload, { hints: decoded.hints });
    lap('extractEvents');
    const ctx = { teamId: 1, receivedAt: Date.now(), ip: '127.0.0.1', anonymizeIps: false, sentAt: extracted.sentAt, engage: false };
    const prepared = prepareRows(ctx, extracted.events, () => uuidv7(ctx.receivedAt));
    lap('prepareRows (normalize, encode)');
    const rows = await applyRows(ctx, prepared);
    lap('applyRows (persons, definitions, slots)');
    events += rows.rows;
  }
  // keep the person store's pending changes bounded like the 1 s background flush does
  await storage.persons.flush();
  await storage.seen.flush();
}
const total = Object.values(t).reduce((a, b) => a + b, 0);
console.log(`${root} ${kind}: ${events} events, ${(total * 1000 / events).toFixed(1)} µs/event in JS stages`);
for (const [k, ms] of Object.entries(t)) console.log(`  ${k.padEnd(40)} ${(ms * 1000 / events).toFixed(2).padStart(7)} µs/event  ${((ms / total) * 100).toFixed(1).padStart(5)}%`);
await storage.close();
