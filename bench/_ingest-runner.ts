import autocannon from 'autocannon';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Body } from './_ingest-payloads';
import { assertBenchTarget } from './_target';

/**
 * Bounded load runs for the ingest bench, with exact accounting of what was acknowledged.
 *
 * - `cannon`: autocannon in `amount` mode (a fixed number of requests, so every request sent is
 *   answered before the run ends: no in-flight request is abandoned at a cut-off and later stored
 *   unseen), with a hard time limit after which it is stopped (then the unanswered requests are
 *   counted as `indeterminate`: they may or may not be stored).
 * - `wrk`: the C load generator for single-event ceilings (autocannon tops out near half of Bun's
 *   rate on small requests). wrk stops at its deadline with up to `connections` requests in
 *   flight, so its runs only bound the stored count: acked ≤ stored ≤ acked + connections × events.
 *
 * Everything targets loopback only, unless a run allowed its `--target` (`_target.ts`).
 */

export interface RunResult {
  /** Answered requests per second (all statuses) over the run's wall time. */
  rps: number;
  /** Events acknowledged (200) per second. */
  eps: number;
  p50: number;
  /** Only where the load generator reports it (autocannon). */
  p90?: number;
  p99: number;
  seconds: number;
  requests: number;
  ok: number;
  /** Events in 200-answered requests. */
  ackedEvents: number;
  non200: number;
  statuses: Record<string, number>;
  errors: number;
  /** Requests sent without a 200 or a definite refusal: may or may not be stored. */
  indeterminate: number;
  /** The run was stopped by its time limit rather than finishing its amount. */
  cut: boolean;
}


export interface CannonCase {
  path: string;
  bodies: readonly Body[];
  headers: Record<string, string>;
}

/**
 * `amount` requests over `connections` sockets (bodies sent in turn on every connection);
 * stopped after `maxSeconds` whatever happens. `onResponse` hears the running count of answers.
 */
export async function cannon(
  baseUrl: string,
  c: CannonCase,
  options: { amount: number; connections: number; maxSeconds: number; onResponse?: (answered: number) => void },
): Promise<RunResult> {
  assertBenchTarget(baseUrl);
  const eventsPerBody = c.bodies[0].events;
  if (c.bodies.some((b) => b.events !== eventsPerBody)) throw new Error('every body of a case must carry the same number of events');
  const connections = Math.min(options.connections, options.amount);
  let t0 = 0;
  let last = 0;
  let ok = 0;
  let answered = 0;
  let finish: (result: autocannon.Result) => void = () => undefined;
  let fail: (error: unknown) => void = () => undefined;
  const finished = new Promise<autocannon.Result>((resolve, reject) => {
    finish = resolve;
    fail = reject;
  });
  const instance = autocannon(
    {
      url: baseUrl,
      connections,
      amount: options.amount,
      timeout: 30,
      sampleInt: 250,
      requests: c.bodies.map((b) => ({ method: 'POST' as const, path: c.path, body: b.body, headers: c.headers })),
    },
    (error, result) => (error ? fail(error) : finish(result)),
  );
  instance.on('start', () => (t0 = performance.now()));
  instance.on('response', (_client, statusCode) => {
    answered++;
    if (statusCode === 200) ok++;
    last = performance.now();
    options.onResponse?.(answered);
  });
  let cut = false;
  const limit = setTimeout(() => {
    cut = true;
    instance.stop();
  }, options.maxSeconds * 1000);
  const result = await finished.finally(() => clearTimeout(limit));
  const seconds = Math.max(0.001, ((last || performance.now()) - (t0 || performance.now())) / 1000);
  const statuses: Record<string, number> = {};
  for (const [code, stat] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = stat?.count ?? 0;
  const sent = (result.requests as unknown as { sent: number }).sent;
  // Answered with a status other than 200: refused (4xx/5xx are never stored by the server).
  const non200 = answered - ok;
  return {
    rps: answered / seconds,
    eps: (ok * eventsPerBody) / seconds,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    seconds,
    requests: answered,
    ok,
    ackedEvents: ok * eventsPerBody,
    non200,
    statuses,
    errors: result.errors,
    indeterminate: Math.max(0, sent - answered),
    cut,
  };
}

let wrkAvailable: boolean | null = null;
export function hasWrk(): boolean {
  if (wrkAvailable === null) wrkAvailable = !!Bun.which('wrk');
  return wrkAvailable;
}

const WRK_SCRIPT = `
local reqs = {}
local n = 0
local idx = 0
init = function(args)
  local path = args[2]
  local headers = {}
  for i = 3, #args, 2 do headers[args[i]] = args[i + 1] end
  for line in io.lines(args[1]) do
    n = n + 1
    reqs[n] = wrk.format("POST", path, headers, line)
  end
  idx = math.random(n) - 1
end
request = function()
  idx = idx % n + 1
  return reqs[idx]
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK {"requests":%d,"duration_us":%d,"status":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect, e.read, e.write, e.timeout, latency:percentile(50), latency:percentile(99)))
end
`;

/**
 * One wrk run: `durationS` seconds, bodies (one JSON document per line, so plain JSON only) sent
 * in turn from a random start on each thread.
 */
export async function wrk(
  baseUrl: string,
  c: CannonCase,
  options: { durationS: number; connections: number; threads: number },
): Promise<RunResult & { maybeStored: number }> {
  assertBenchTarget(baseUrl);
  const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
  try {
    const script = join(dir, 'post.lua');
    const bodies = join(dir, 'bodies.txt');
    writeFileSync(script, WRK_SCRIPT);
    writeFileSync(bodies, c.bodies.map((b) => b.body.toString('utf8').replace(/\n/g, ' ')).join('\n') + '\n');
    const headerArgs = Object.entries(c.headers).flat();
    const durationS = Math.min(Math.max(1, Math.round(options.durationS)), 60);
    const proc = Bun.spawn(
      ['wrk', `-t${options.threads}`, `-c${options.connections}`, `-d${durationS}s`, '--timeout', '10s', '-s', script, baseUrl, '--', bodies, c.path, ...headerArgs],
      { stdout: 'pipe', stderr: 'pipe' },
    );
    const killer = setTimeout(() => proc.kill('SIGKILL'), (durationS + 30) * 1000);
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    clearTimeout(killer);
    const line = /WRK (\{.*\})/.exec(out);
    if (!line) throw new Error(`wrk gave no summary:\n${out}\n${err}`);
    const s = JSON.parse(line[1]) as Record<string, number>;
    const seconds = s.duration_us / 1e6;
    const eventsPerBody = c.bodies[0].events;
    const ok = s.requests - s.status;
    const errors = s.connect + s.read + s.write + s.timeout;
    return {
      rps: s.requests / seconds,
      eps: (ok * eventsPerBody) / seconds,
      p50: s.p50_us / 1000,
      p99: s.p99_us / 1000,
      seconds,
      requests: s.requests,
      ok,
      ackedEvents: ok * eventsPerBody,
      non200: s.status,
      statuses: {},
      errors,
      // In flight when wrk stopped, plus timed-out or broken ones: unknown fate.
      indeterminate: options.connections + s.timeout + s.read + s.write,
      cut: true,
      maybeStored: (options.connections + s.timeout + s.read + s.write) * eventsPerBody,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
