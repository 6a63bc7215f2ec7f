import { expect } from 'bun:test';
import { TEST_KEYS, startServer, type ServerProcess } from '../helpers/server-process';

/**
 * What the e2e suites read back through the private API with the personal key: stored events,
 * flags, and the persons behind a cohort (which show every distinct id of a merged person).
 */

export const PROJECT_ID = 1;

export interface E2eServer extends ServerProcess {
  /** Exit code (if it stopped) and the tail of what it printed, for failure messages. */
  diagnostics(): string;
}

/**
 * The real server, as `startServer` starts it, with its stderr drained too (the logger writes
 * there: a full pipe would stall the server) and kept for `diagnostics()`.
 */
export async function startE2eServer(): Promise<E2eServer> {
  const server = await startServer();
  let stderr = '';
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of server.proc.stderr as unknown as AsyncIterable<Uint8Array>) {
      stderr = (stderr + decoder.decode(chunk)).slice(-20_000);
    }
  })().catch(() => {});
  return Object.assign(server, {
    diagnostics: () =>
      `server ${server.url} exit code: ${server.proc.exitCode ?? 'running'}\n--- stdout (tail) ---\n${server.output().slice(-4_000)}\n--- stderr (tail) ---\n${stderr.slice(-4_000)}`,
  });
}

export interface StoredEvent {
  id: string;
  event: string;
  distinct_id: string;
  properties: Record<string, any>;
  timestamp: string;
  person: { distinct_ids: string[]; properties: Record<string, any>; is_identified: boolean } | null;
  elements: Array<Record<string, any>>;
  elements_chain: string;
}

export interface StoredPerson {
  id: number | string;
  uuid: string;
  distinct_ids: string[];
  properties: Record<string, any>;
  is_identified: boolean;
}

const auth = { authorization: `Bearer ${TEST_KEYS.personal}` };

export async function api<T = any>(server: ServerProcess, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: res.status, body: parsed as T };
}

/** Create a feature flag in project 1 through the management API; returns the stored flag. */
export async function createFlag(server: ServerProcess, flag: Record<string, unknown>) {
  const res = await api(server, 'POST', `/api/projects/${PROJECT_ID}/feature_flags/`, flag);
  if (res.status !== 201) throw new Error(`creating flag ${String(flag.key)}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: number; key: string; filters: any };
}

/** One page (up to 1000) of `/api/projects/1/events/` for the given filters, newest first. */
export async function listEvents(server: ServerProcess, filters: Record<string, string> = {}): Promise<StoredEvent[]> {
  const query = new URLSearchParams({ limit: '1000', ...filters });
  const res = await api(server, 'GET', `/api/projects/${PROJECT_ID}/events/?${query}`);
  if (res.status !== 200) throw new Error(`GET events?${query}: ${res.status} ${JSON.stringify(res.body).slice(0, 500)}`);
  return (res.body as { results: StoredEvent[] }).results;
}

/**
 * Poll the events API (bounded: `timeoutMs`) until `ready(events)` holds; returns the last page.
 * Ingestion answers 200 once rows are buffered, so one read usually suffices.
 */
export async function waitForEvents(
  server: ServerProcess,
  filters: Record<string, string>,
  ready: (events: StoredEvent[]) => boolean,
  timeoutMs = 15_000,
): Promise<StoredEvent[]> {
  const deadline = Date.now() + timeoutMs;
  let events: StoredEvent[] = [];
  for (let attempt = 0; attempt < 1_000; attempt++) {
    events = await listEvents(server, filters);
    if (ready(events) || Date.now() > deadline) break;
    await Bun.sleep(100);
  }
  return events;
}

/** The only stored event named `event` of `distinctId` (fails listing what was stored otherwise). */
export async function theEvent(server: ServerProcess, event: string, distinctId: string, timeoutMs?: number): Promise<StoredEvent> {
  const events = await waitForEvents(server, { event, distinct_id: distinctId }, (e) => e.length >= 1, timeoutMs);
  if (events.length !== 1) {
    const all = await listEvents(server, { distinct_id: distinctId });
    throw new Error(`expected one ${event} of ${distinctId}, got ${events.length}; stored for ${distinctId}: ${JSON.stringify(all.map((e) => e.event))}`);
  }
  return events[0];
}

/**
 * Every person whose person property `key` equals `value`, with all their distinct ids, read
 * through a dynamic cohort's persons (the events API shows one distinct id per person, as PostHog).
 */
export async function personsWhere(server: ServerProcess, key: string, value: string): Promise<StoredPerson[]> {
  const cohort = await api(server, 'POST', `/api/projects/${PROJECT_ID}/cohorts/`, {
    name: `e2e ${key}=${value}`,
    filters: { properties: { type: 'AND', values: [{ type: 'person', key, operator: 'exact', value }] } },
  });
  expect(cohort.status).toBe(201);
  const deadline = Date.now() + 15_000;
  let persons: StoredPerson[] = [];
  for (let attempt = 0; attempt < 200; attempt++) {
    const res = await api(server, 'GET', `/api/projects/${PROJECT_ID}/cohorts/${cohort.body.id}/persons/`);
    expect(res.status).toBe(200);
    persons = res.body.results;
    if (persons.length > 0 || Date.now() > deadline) break;
    await Bun.sleep(100);
  }
  return persons;
}

export const names = (events: StoredEvent[]) => events.map((e) => e.event).sort();
