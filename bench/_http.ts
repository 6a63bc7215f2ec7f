import autocannon from 'autocannon';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Subprocess } from 'bun';
import { withRuntimeEnv } from '../src/runtime-env';
import { assertBenchTarget } from './_target';

/**
 * Helpers for HTTP benchmarks: the real server and a bare `Bun.serve` baseline, each in its own
 * child process on a free loopback port (so both have the same process shape), and a bounded
 * autocannon load run. Everything listens on 127.0.0.1 only.
 */

export const ROOT = resolve(import.meta.dir, '..');

export const BENCH_KEYS = {
  email: 'bench@example.com',
  personal: 'phx_benchPersonalKey000000000000000000000000',
  project: 'phc_benchProjectKey0000000000000000000000000',
};

export interface ChildServer {
  url: string;
  stop(): Promise<void>;
}

/**
 * Wait for the child to print `Listening on http://host:port`; keep draining its output after
 * (echoing stderr lines when asked, so a bench shows the server's warnings).
 */
export async function waitForListening(proc: Subprocess<'ignore', 'pipe', 'pipe'>, timeoutMs = 30_000, echoStderr = false): Promise<number> {
  const reader = proc.stdout.getReader();
  const decoder = new TextDecoder();
  const deadline = Date.now() + timeoutMs;
  let out = '';
  let pending = reader.read();
  for (;;) {
    if (Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
    const chunk = await Promise.race([pending, Bun.sleep(200).then(() => null)]);
    if (!chunk) continue;
    if (chunk.done) throw new Error(`server exited before listening:\n${out}\n${await new Response(proc.stderr).text()}`);
    out += decoder.decode(chunk.value);
    pending = reader.read();
    const m = /Listening on http:\/\/[^:]+:(\d+)/.exec(out);
    if (!m) continue;
    void (async () => {
      for (;;) if ((await pending).done) break;
      else pending = reader.read();
    })();
    if (echoStderr) {
      void (async () => {
        const r = proc.stderr.getReader();
        for (;;) {
          const { done, value } = await r.read();
          if (done) break;
          const text = decoder.decode(value).trim();
          if (text) console.error(`   [server] ${text.slice(0, 2000)}`);
        }
      })();
    } else void new Response(proc.stderr).text();
    return Number(m[1]);
  }
}

/** SIGTERM (the server flushes and closes), SIGKILL if it has not exited within a minute. */
export async function stopChild(proc: Subprocess) {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill('SIGTERM');
  const exited = await Promise.race([proc.exited.then(() => true), Bun.sleep(60_000).then(() => false)]);
  if (!exited) {
    proc.kill('SIGKILL');
    await proc.exited;
  }
}

export interface RealServer extends ChildServer {
  dataDir: string;
  pid: number;
  proc: Subprocess<'ignore', 'pipe', 'pipe'>;
}

/**
 * This process's environment with the runtime settings `npm start` gives the server (README,
 * Memory), unless set: the real server and the floors run with them alike, so a floor that also
 * runs DuckDB (the store floor) gets the same allocator.
 */
export const runtimeEnv = (): Record<string, string | undefined> => withRuntimeEnv({ ...process.env });

/**
 * The real server (`bun src/index.ts`) with a temporary data dir and the known bench keys.
 * `root`: the checkout to run (an A/B of a proposed change runs a patched copy).
 */
export async function startRealServer(env: Record<string, string> = {}, options: { root?: string; echoStderr?: boolean } = {}): Promise<RealServer> {
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-server-'));
  const proc = Bun.spawn([process.execPath, 'src/index.ts'], {
    cwd: options.root ?? ROOT,
    env: {
      ...runtimeEnv(),
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      BOOTSTRAP_EMAIL: BENCH_KEYS.email,
      BOOTSTRAP_PERSONAL_API_KEY: BENCH_KEYS.personal,
      BOOTSTRAP_PROJECT_API_KEY: BENCH_KEYS.project,
      ...env,
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  try {
    const port = await waitForListening(proc, 30_000, options.echoStderr ?? false);
    return {
      url: `http://127.0.0.1:${port}`,
      dataDir,
      pid: proc.pid,
      proc,
      async stop() {
        await stopChild(proc);
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    proc.kill('SIGKILL');
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}

/** The ceiling: Bun.serve that reads and parses the JSON body, then answers `{"status":1}`. */
const BARE_SERVER = `
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(request) {
    if (request.method === 'POST') JSON.parse(await request.text());
    return new Response('{"status":1}', { headers: { 'content-type': 'application/json' } });
  },
});
console.log('Listening on http://127.0.0.1:' + server.port);
`;

export async function startBareServer(): Promise<ChildServer> {
  const proc = Bun.spawn([process.execPath, '-e', BARE_SERVER], { cwd: ROOT, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const port = await waitForListening(proc);
  return { url: `http://127.0.0.1:${port}`, stop: () => stopChild(proc) };
}

export interface LoadRequest {
  method?: 'GET' | 'POST';
  path: string;
  body?: string;
  headers?: Record<string, string>;
  /** Rebuild the body before every send (e.g. a new user each time); costs client CPU. */
  makeBody?: () => string;
}

export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  requests: number;
  errors: number;
  non2xx: number;
}

/**
 * One bounded autocannon run (`durationS` seconds, `connections` sockets, loopback only). The
 * requests are sent in turn on every connection, so a list of bodies spreads the load over users.
 */
export async function runLoad(
  baseUrl: string,
  requests: LoadRequest[],
  options: { connections?: number; durationS?: number } = {},
): Promise<LoadResult> {
  assertBenchTarget(baseUrl);
  const durationS = Math.min(options.durationS ?? 10, 60);
  const result = await autocannon({
    url: baseUrl,
    connections: options.connections ?? 64,
    duration: durationS,
    timeout: 10,
    requests: requests.map((r) => ({
      method: r.method ?? 'POST',
      path: r.path,
      body: r.body,
      headers: { 'content-type': 'application/json', ...r.headers },
      ...(r.makeBody && { setupRequest: (request: object) => ({ ...request, body: r.makeBody!() }) }),
    })),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: result.requests.total,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

export const percentile = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? Number.NaN;
};

/** The events-list requests a query probe makes during a load (project 1). */
export const EVENTS_LIST_QUERIES: Readonly<Record<string, string>> = {
  'latest 100': '/api/projects/1/events/?limit=100',
  'latest 100 of one event': '/api/projects/1/events/?limit=100&event=%24pageview',
  'select count()': `/api/projects/1/events/?select=${encodeURIComponent('["count()"]')}`,
};

/**
 * Events-list requests, one every 250 ms in turn, until stopped: the latencies of those `ask`
 * answered (true) by kind. `ask(path)` makes the request: over HTTP, or through the app in process.
 */
export function startQueryProbe(ask: (path: string) => Promise<boolean>) {
  let on = true;
  const out: Record<string, number[]> = {};
  const loop = (async () => {
    while (on) {
      for (const [name, path] of Object.entries(EVENTS_LIST_QUERIES)) {
        if (!on) break;
        const t = performance.now();
        if (await ask(path)) (out[name] ??= []).push(performance.now() - t);
        await Bun.sleep(250);
      }
    }
  })();
  return {
    async stop(): Promise<Record<string, number[]>> {
      on = false;
      await loop;
      return out;
    },
  };
}

/** JSON request to the real server with the bench personal key. */
export async function apiJson(baseUrl: string, method: string, path: string, body?: unknown) {
  const response = await fetch(baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${BENCH_KEYS.personal}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}
