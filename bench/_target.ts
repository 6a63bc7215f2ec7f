import { isLoopbackHost } from './_args';
import { BENCH_KEYS } from './_http';

/**
 * The server a bench measures: one it spawned (loopback, the bench keys, project 1) or one
 * already running (`--target URL`), whose keys come from the environment:
 *
 *   BENCH_PROJECT_API_KEY   the project API key (phc_…) events and flag checks are sent with
 *   BENCH_PERSONAL_API_KEY  a personal API key (phx_…) of a user of that project
 *
 * Load generators refuse any host but loopback unless the run said `--allow-remote`.
 */

export interface ServerTarget {
  url: string;
  projectId: number;
  projectKey: string;
  personalKey: string;
}

export const TARGET_ENV = { project: 'BENCH_PROJECT_API_KEY', personal: 'BENCH_PERSONAL_API_KEY' } as const;

export const spawnedTarget = (url: string): ServerTarget => ({ url, projectId: 1, projectKey: BENCH_KEYS.project, personalKey: BENCH_KEYS.personal });

const allowedHosts = new Set<string>();

/** Let the load generators send to this (non-loopback) host: only after `--allow-remote`. */
export function allowRemoteHost(url: string) {
  allowedHosts.add(new URL(url).host);
}

export function assertBenchTarget(baseUrl: string) {
  const url = new URL(baseUrl);
  if (isLoopbackHost(url.hostname) || allowedHosts.has(url.host)) return;
  throw new Error(`benchmarks only load loopback servers unless run with --target ${url.origin} --allow-remote`);
}

/**
 * The running server at `url` with the keys of the environment: the project is the personal
 * key's current project, which must be the one the project key belongs to.
 */
export async function resolveTarget(url: string, env: Record<string, string | undefined> = process.env): Promise<ServerTarget> {
  const projectKey = env[TARGET_ENV.project];
  const personalKey = env[TARGET_ENV.personal];
  const missing = [!projectKey && `${TARGET_ENV.project} (phc_…)`, !personalKey && `${TARGET_ENV.personal} (phx_…)`].filter(Boolean);
  if (missing.length) throw new Error(`--target needs the server's keys in the environment: ${missing.join(' and ')}`);
  const response = await fetch(`${url}/api/projects/@current/`, { headers: { authorization: `Bearer ${personalKey}` } }).catch((error) => {
    throw new Error(`--target ${url}: ${error instanceof Error ? error.message : String(error)}`);
  });
  const body = (await response.json().catch(() => null)) as { id?: number; api_token?: string } | null;
  if (response.status !== 200 || typeof body?.id !== 'number') throw new Error(`--target ${url}: GET /api/projects/@current/ answered ${response.status} with ${TARGET_ENV.personal}`);
  if (body.api_token !== projectKey) throw new Error(`--target ${url}: ${TARGET_ENV.project} is not the key of project ${body.id}, the current project of ${TARGET_ENV.personal}`);
  return { url, projectId: body.id, projectKey: projectKey!, personalKey: personalKey! };
}

/** A JSON request to the private API with the target's personal key. */
export async function targetJson(target: ServerTarget, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(target.url + path, {
    method,
    headers: { authorization: `Bearer ${target.personalKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    parsed = text;
  }
  return { status: response.status, body: parsed };
}

/** Events of the target's project as the events API counts them (null when it does not answer). */
export async function countEvents(target: ServerTarget): Promise<number | null> {
  const r = await targetJson(target, 'GET', `/api/projects/${target.projectId}/events/?limit=1`).catch(() => null);
  return r?.status === 200 && typeof r.body?.count === 'number' ? r.body.count : null;
}

/**
 * Poll the events API until it shows `expected` events (or more than `expected + slack`, which
 * cannot get better), within `timeoutMs`. Returns the last count and how long it took.
 */
export async function waitForCount(
  target: ServerTarget,
  expected: number,
  slack: number,
  timeoutMs: number,
  count: (target: ServerTarget) => Promise<number | null> = countEvents,
): Promise<{ count: number | null; seconds: number }> {
  const t0 = performance.now();
  let seen: number | null = null;
  while (performance.now() - t0 < timeoutMs) {
    seen = await count(target);
    if (seen !== null && seen >= expected) break;
    await Bun.sleep(100);
  }
  // A run with in-flight requests of unknown fate may still add up to `slack`: let it settle.
  if (slack > 0 && seen !== null) {
    for (let i = 0; i < 20; i++) {
      await Bun.sleep(250);
      const again = await count(target);
      if (again === seen) break;
      seen = again;
    }
  }
  return { count: seen, seconds: (performance.now() - t0) / 1000 };
}
