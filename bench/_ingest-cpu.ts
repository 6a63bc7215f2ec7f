// Per-stage CPU of the ingest path, in-process (no HTTP): µs per event for each step of
// src/modules/capture/ingest.ts, on the same bodies the ingest bench sends. Robust to a noisy
// machine (CPU time of this thread, many repetitions). `bun bench/_ingest-cpu.ts [single|batch]`.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { NormalizedEvent } from '../src/core/ingest/normalize-event';
import type { StoredEventRow } from '../src/core/events/columns';
import { captureBodies, batchBodies } from './_ingest-payloads';
import { withPipeline } from '../src/pipeline';

// SRC_ROOT: another checkout's root (an A/B of a proposed change), default this one.
const root = resolve(process.env.SRC_ROOT ?? join(import.meta.dir, '..'));
const { decodePayload } = await import(`${root}/src/core/ingest/decode-payload.ts`);
const { extractEvents } = await import(`${root}/src/core/ingest/extract-events.ts`);
const { normalizeEvent } = await import(`${root}/src/core/ingest/normalize-event.ts`);
const { hotValuesOf } = await import(`${root}/src/core/events/columns.ts`);
const { encodeFrame } = await import(`${root}/src/storage/events/wal-format.ts`);
const { openStorage } = await import(`${root}/src/storage/index.ts`);
const { uuidv7 } = await import(`${root}/src/ids.ts`);

const kind = process.argv[2] ?? 'single';
const bodies = kind === 'single' ? captureBodies(4000) : batchBodies(40, 100_000, { gzip: false });
const dir = mkdtempSync(join(tmpdir(), 'ingest-cpu-'));
const storage = await openStorage(withPipeline({ dataDir: dir }));
await storage.persons.ensureLoaded(1);
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
    const now = new Date();
    const ctx = { now, sentAt: extracted.sentAt === null ? null : new Date(extracted.sentAt), ip: '127.0.0.1', anonymizeIps: false, newUuid: () => uuidv7(now.getTime()) };
    const normalized: NormalizedEvent[] = [];
    for (const raw of extracted.events) { const r = normalizeEvent(raw, ctx); if ('ok' in r) normalized.push(r.ok); }
    lap('normalizeEvent');
    const plans = normalized.map((e) => storage.persons.processEvent(1, e));
    lap('persons.processEvent');
    for (const e of normalized) storage.seen.record(1, e.event, e.timestamp, e.properties, Object.keys(e.set).length ? e.set : null);
    lap('seen.record');
    const props = normalized.map((e) => JSON.stringify(e.properties));
    lap('JSON.stringify(properties)');
    const hot = normalized.map((e) => hotValuesOf(e.properties));
    lap('hotValuesOf');
    const rows: StoredEventRow[] = normalized.map((e, i) => ({ uuid: e.uuid, teamId: 1, event: e.event, distinctId: e.distinctId, personId: plans[i].personId, properties: props[i], timestamp: e.timestamp, createdAt: now.getTime(), elementsChain: e.elementsChain, hot: hot[i] }));
    lap('build rows');
    encodeFrame(rows);
    lap('encodeFrame');
    events += normalized.length;
  }
  // keep the person store's pending changes bounded like the 1 s background flush does
  await storage.persons.flush();
  await storage.seen.flush();
}
const total = Object.values(t).reduce((a, b) => a + b, 0);
console.log(`${root} ${kind}: ${events} events, ${(total * 1000 / events).toFixed(1)} µs/event in JS stages`);
for (const [k, ms] of Object.entries(t)) console.log(`  ${k.padEnd(30)} ${(ms * 1000 / events).toFixed(2).padStart(7)} µs/event  ${((ms / total) * 100).toFixed(1).padStart(5)}%`);
await storage.close();
rmSync(dir, { recursive: true, force: true });
