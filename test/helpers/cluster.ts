import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { TEST_KEYS } from './server-process';

/**
 * Driving a local cluster from tests as an operator does: `npm run cluster -- <command>` run to
 * its end, its summary, its ClickHouse servers' HTTP ports, and bounded polling for what other
 * processes do in their own time.
 */
const ROOT = resolve(import.meta.dir, '..', '..');

export interface UpSummary {
  nodes: string[];
  project_id: number;
  project_api_key: string;
  personal_api_key: string;
  pids: Record<'nodes' | 'writers' | 'supervisors' | 'clickhouse' | 'postgres' | 'redis', number[]>;
}

/** `npm run cluster -- <command> [args] --dir DIR`'s script, run to its end: its status and output. */
export async function cluster(command: string, dir: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  // This test process owns the cluster: should it die before its `down`, the cluster is stopped anyway.
  const owner = command === 'up' ? ['--owner-pid', String(process.pid)] : [];
  const child = Bun.spawn([process.execPath, join(ROOT, 'src/cli/cluster/index.ts'), command, ...args, '--dir', dir, ...owner], {
    cwd: ROOT,
    env: { ...process.env, BOOTSTRAP_EMAIL: TEST_KEYS.email, BOOTSTRAP_PERSONAL_API_KEY: TEST_KEYS.personal, BOOTSTRAP_PROJECT_API_KEY: TEST_KEYS.project },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr };
}

/** The JSON summary a cluster command prints as its last line. */
export const summaryOf = (stdout: string) => JSON.parse(stdout.trim().split('\n').pop()!) as UpSummary;

/** Each ClickHouse server's HTTP base URL, from its config: the first is where writers insert (the Distributed table). */
export const shardUrls = (dir: string) => [0, 1].map((i) => `http://127.0.0.1:${/<http_port>(\d+)</.exec(readFileSync(join(dir, `clickhouse-${i}`, 'config.xml'), 'utf8'))![1]}`);

/** One statement on a ClickHouse server over HTTP, its rows as TabSeparated text. */
export async function chQuery(base: string, statement: string): Promise<string> {
  const answer = await fetch(`${base}/?database=hogbase`, { method: 'POST', body: statement });
  const text = await answer.text();
  if (!answer.ok) throw new Error(text);
  return text.trim();
}

/** Ask until `holds`, at most `ms` (other processes do the work); the last answer either way. */
export async function eventually<T>(ask: () => Promise<T>, holds: (value: T) => boolean, ms: number): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await ask();
    if (holds(value) || Date.now() > until) return value;
    await Bun.sleep(50);
  }
}

/**
 * A load as the SDKs send it: `/batch/` requests of events that carry their own uuid and
 * timestamp, a few in flight, each retried until a node answers 200 (the next attempt at the other
 * node; after a 503, its Retry-After is honoured, shortened to keep tests quick). A request whose
 * answer was lost and is sent again is the same events again, which ClickHouse reads once.
 * Requests from `holdFrom` on wait for `release()`, so the load goes on across a fault.
 */
export interface Load {
  done: Promise<void>;
  release(): void;
  /** Every event uuid a node answered 200 for. */
  acknowledged: Set<string>;
  /** Per node (index): events it answered 200 for. */
  acknowledgedBy: number[];
  /** What failed attempts got: 'refused' (no connection) or the status, with how often. */
  failures: Map<string, number>;
  /** Retry-After values of the 503s. */
  retryAfter: Set<string | null>;
}

export function startLoad(options: { nodes: string[]; apiKey: string; event: string; batches: number; perBatch: number; holdFrom: number; concurrency?: number }): Load {
  const { nodes, apiKey, event, batches, perBatch, holdFrom } = options;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const load: Load = { done: Promise.resolve(), release, acknowledged: new Set(), acknowledgedBy: nodes.map(() => 0), failures: new Map(), retryAfter: new Set() };
  const base = Date.now();
  const send = async (n: number) => {
    const batch = Array.from({ length: perBatch }, (_, i) => ({
      event,
      // 40 people: every partition (and both shards) gets some.
      distinct_id: `${event}-${(n * perBatch + i) % 40}`,
      uuid: crypto.randomUUID(),
      timestamp: new Date(base + n * perBatch + i).toISOString(),
      properties: { n, i },
    }));
    const body = JSON.stringify({ api_key: apiKey, batch });
    for (let attempt = 0; attempt < 600; attempt++) {
      const node = (n + attempt) % nodes.length;
      let failure: string;
      let pause = 50;
      try {
        const answer = await fetch(`${nodes[node]}/batch/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        await answer.arrayBuffer();
        if (answer.status === 200) {
          for (const e of batch) load.acknowledged.add(e.uuid);
          load.acknowledgedBy[node]! += batch.length;
          return;
        }
        failure = String(answer.status);
        if (answer.status === 503) {
          load.retryAfter.add(answer.headers.get('retry-after'));
          pause = Math.min(Number(answer.headers.get('retry-after') ?? 1) * 1000, 200);
        }
      } catch {
        failure = 'refused';
      }
      load.failures.set(failure, (load.failures.get(failure) ?? 0) + 1);
      await Bun.sleep(pause);
    }
    throw new Error(`batch ${n} of ${event} was never acknowledged`);
  };
  let next = 0;
  load.done = Promise.all(
    Array.from({ length: options.concurrency ?? 4 }, async () => {
      while (next < batches) {
        const n = next++;
        if (n >= holdFrom) await released;
        await send(n);
      }
    }),
  ).then(() => undefined);
  return load;
}

/** Every event of one name a node's events API lists, page after page (its `next` links): their ids. */
export async function listedIds(node: string, up: UpSummary, event: string): Promise<string[]> {
  const ids: string[] = [];
  let url: string | null = `${node}/api/projects/${up.project_id}/events/?event=${encodeURIComponent(event)}&limit=1000`;
  while (url) {
    const answer = await fetch(url, { headers: { authorization: `Bearer ${up.personal_api_key}` } });
    if (answer.status !== 200) throw new Error(`events API: ${answer.status} ${await answer.text()}`);
    const page = (await answer.json()) as { next: string | null; results: Array<{ id: string }> };
    ids.push(...page.results.map((e) => e.id));
    url = page.next ? new URL(page.next, node).toString() : null;
  }
  return ids;
}
