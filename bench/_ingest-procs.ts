import { readFileSync, writeFileSync } from 'node:fs';
import type { Subprocess } from 'bun';
import { ROOT, runtimeEnv, startRealServer, stopChild, waitForListening } from './_http';

/**
 * Child processes for the ingest bench, with their pid (for peak RSS from /proc): the real server
 * (durable by default) on a temporary DATA_DIR, and a bare `Bun.serve` that reads the body,
 * gunzips it when it is gzip (by its magic bytes, as posthog-js sends it) and `JSON.parse`s it,
 * then answers `{"status":1}`: the same work the real server must do before its own. Loopback only.
 */

export interface Child {
  url: string;
  pid: number;
  proc: Subprocess<'ignore', 'pipe', 'pipe'>;
  dataDir: string | null;
  stop(): Promise<void>;
}

/** `root`: the checkout to run (default this one; an A/B of a proposed change runs a patched copy). */
export async function spawnRealServer(env: Record<string, string> = {}, root = ROOT): Promise<Child> {
  return startRealServer(env, { root, echoStderr: true });
}

/**
 * The durable floor's additions: the least a server that answers only once the events are on
 * disk must do beyond the bare server's work, the body appended to a log with group commit before
 * the 200. No key check, no persons, nothing behind the answer: a floor for durable
 * acknowledgement on this machine, reported next to the bare ceiling. Two designs:
 *
 * - `flushes: 1`, as the real server does: one fdatasync at a time, the requests arriving
 *   meanwhile written together the moment it ends and flushed at once;
 * - `flushes: 2`: the appends of one turn of the event loop are written together at its end and
 *   flushed at once while up to one other flush is still running (each group answered when its
 *   own flush ends). Under a closed-loop client this breaks the lockstep of flush, answers and
 *   the client's next requests; it was the faster floor on this machine under autocannon.
 */
const floorLog = (flushes: 1 | 2) => `
const { openSync, writevSync, fdatasync, closeSync, rmSync, mkdtempSync } = require('node:fs');
const { join } = require('node:path');
const dir = mkdtempSync(join(require('node:os').tmpdir(), 'bench-floor-'));
const fd = openSync(join(dir, 'log'), 'w');
const MAX_FLUSHES = ${flushes};
let at = 0, flushing = 0, waiters = [], bufs = [], gathering = false;
const flush = () => {
  gathering = false;
  if (flushing >= MAX_FLUSHES || waiters.length === 0) return;
  flushing++;
  const ws = waiters, bs = bufs;
  waiters = [];
  bufs = [];
  for (let i = 0; i < bs.length; i += 1024) at += writevSync(fd, bs.slice(i, i + 1024), at);
  fdatasync(fd, () => { flushing--; for (const w of ws) w(); flush(); });
};
const logged = (bytes) => new Promise((resolve) => {
  bufs.push(bytes);
  waiters.push(resolve);
  if (MAX_FLUSHES === 1) flush();
  else if (!gathering) { gathering = true; setImmediate(flush); }
});
const stop = () => { closeSync(fd); rmSync(dir, { recursive: true, force: true }); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
`;

/** The bare server (with `flushes`: a durable floor, the same server waiting for its log before the 200). */
const serverSource = (flushes: 0 | 1 | 2) => `${flushes ? floorLog(flushes) : ''}
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  maxRequestBodySize: 64 * 1024 * 1024,
  async fetch(request) {
    if (request.method === 'POST') {
      let bytes = new Uint8Array(await request.arrayBuffer());
      if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = Bun.gunzipSync(bytes);
      JSON.parse(new TextDecoder().decode(bytes));${flushes ? '\n      await logged(bytes);' : ''}
    }
    return new Response('{"status":1}', { headers: { 'content-type': 'application/json' } });
  },
});
console.log('Listening on http://127.0.0.1:' + server.port);
`;

/**
 * The store floor: the least a server must do to make acknowledged events queryable as columns,
 * built for the purpose as the durable floor is for acknowledging. The durable floor (one
 * fdatasync at a time), its log cut into segments (at 16 MB, or a quarter second after the first
 * byte), and each segment handed whole to DuckDB's own JSON reader, written as one zstd Parquet
 * file: `read_json` → `COPY … TO`, one statement a segment, one at a time. No key check, no uuid
 * or time normalization, no persons, no definitions, no dedupe, no sort; `GET /count` answers how
 * many rows the Parquet files hold. What the real server does beyond it is the product.
 */
const storeFloorSource = `
const { openSync, writevSync, fdatasync, closeSync, rmSync, mkdtempSync } = require('node:fs');
const { join } = require('node:path');
const { DuckDBInstance } = require('@duckdb/node-api');
const dir = mkdtempSync(join(require('node:os').tmpdir(), 'bench-store-floor-'));
const SEGMENT_BYTES = 16 * 1024 * 1024, SEGMENT_MS = 250;
const EV = 'STRUCT(event VARCHAR, distinct_id VARCHAR, uuid VARCHAR, "timestamp" VARCHAR, properties JSON)';
const NL = Buffer.from('\\n');
let seg = 0, fd = openSync(join(dir, 'seg-0'), 'w'), at = 0, openedAt = 0;
let flushing = false, waiters = [], bufs = [];
const ready = [];
let loading = false, stored = 0;
const conn = await (await DuckDBInstance.create(':memory:')).connect();
const load = async () => {
  if (loading) return;
  loading = true;
  while (ready.length) {
    const path = ready.shift();
    const out = path + '.parquet';
    const r = await conn.run(\`COPY (SELECT e.uuid, e.event, e.distinct_id, TRY_CAST(e."timestamp" AS TIMESTAMPTZ) AS "timestamp", e.properties
      FROM (SELECT unnest(coalesce(batch, [struct_pack(event := event, distinct_id := distinct_id, uuid := uuid, "timestamp" := "timestamp", properties := properties)])) AS e
      FROM read_json('\${path}', format = 'newline_delimited', maximum_object_size = 67108864, columns = {batch: '\${EV}[]', event: 'VARCHAR', distinct_id: 'VARCHAR', uuid: 'VARCHAR', "timestamp": 'VARCHAR', properties: 'JSON'})))
      TO '\${out}' (FORMAT parquet, COMPRESSION zstd)\`);
    stored += Number(r.rowsChanged);
    rmSync(path, { force: true });
  }
  loading = false;
};
// Only between flushes: then everything written to the segment is on disk.
const rotate = () => {
  if (flushing || at === 0) return;
  closeSync(fd);
  ready.push(join(dir, 'seg-' + seg));
  seg++;
  fd = openSync(join(dir, 'seg-' + seg), 'w');
  at = 0;
  load();
};
const flush = () => {
  if (flushing || waiters.length === 0) return;
  flushing = true;
  const ws = waiters, bs = bufs;
  waiters = [];
  bufs = [];
  if (at === 0) openedAt = Date.now();
  for (let i = 0; i < bs.length; i += 1024) at += writevSync(fd, bs.slice(i, i + 1024), at);
  fdatasync(fd, () => {
    flushing = false;
    for (const w of ws) w();
    if (at >= SEGMENT_BYTES) rotate();
    flush();
  });
};
setInterval(() => { if (at > 0 && Date.now() - openedAt >= SEGMENT_MS) rotate(); }, 50);
const logged = (bytes) => new Promise((resolve) => {
  bufs.push(bytes, NL);
  waiters.push(resolve);
  flush();
});
const stop = () => { closeSync(fd); rmSync(dir, { recursive: true, force: true }); process.exit(0); };
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  maxRequestBodySize: 64 * 1024 * 1024,
  async fetch(request) {
    if (request.method === 'GET') return new Response(JSON.stringify({ count: stored }), { headers: { 'content-type': 'application/json' } });
    let bytes = new Uint8Array(await request.arrayBuffer());
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = Bun.gunzipSync(bytes);
    JSON.parse(new TextDecoder().decode(bytes));
    await logged(bytes);
    return new Response('{"status":1}', { headers: { 'content-type': 'application/json' } });
  },
});
console.log('Listening on http://127.0.0.1:' + server.port);
`;

async function spawnScript(source: string): Promise<Child> {
  const proc = Bun.spawn([process.execPath, '-e', source], { cwd: ROOT, env: runtimeEnv(), stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const port = await waitForListening(proc, 30_000, true);
  return { url: `http://127.0.0.1:${port}`, pid: proc.pid, proc, dataDir: null, stop: () => stopChild(proc) };
}

export const spawnBareServer = (): Promise<Child> => spawnScript(serverSource(0));
export const spawnDurableFloorServer = (flushes: 1 | 2): Promise<Child> => spawnScript(serverSource(flushes));
export const spawnStoreFloorServer = (): Promise<Child> => spawnScript(storeFloorSource);

/** Peak resident set (VmHWM) of a process in MB, or null when /proc cannot tell. */
export function peakRssMb(pid: number): number | null {
  try {
    const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** Current resident set (VmRSS) in MB. */
export function rssMb(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : null;
  } catch {
    return null;
  }
}

/** Reset VmHWM to the current RSS (`echo 5 > clear_refs`), so the next peak is one case's. */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** CPU seconds (user + system) a process used so far, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[11] = utime, fields[12] = stime (from field 3 on), in clock ticks (100/s on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}
