import { uuidv7 } from '../../src/ids';

/**
 * Concurrent `/batch/` clients for crash tests: each sends batches of events with client uuids
 * (as posthog-node does), records every uuid answered 200, and keeps a batch that was not
 * acknowledged (error, timeout, non-200) to send again, unchanged, before any new one: a retry
 * with the same uuids, which the server must de-duplicate. Every loop is bounded in requests and
 * time, and stops by itself once told to.
 */

export interface Identity {
  anon: string;
  user: string;
  email: string;
}

export interface LoadState {
  /** Every uuid answered 200 (a retried batch may be acknowledged more than once). */
  acked: Set<string>;
  /** `$identify` merges that were acknowledged (their batch answered 200). */
  identities: Identity[];
  /** Batches not acknowledged yet, per client, to send first next time. */
  pending: Map<number, Batch>;
  requests: number;
  ok: number;
  failed: number;
  retried: number;
  statuses: Map<string, number>;
}

export interface Batch {
  events: Array<Record<string, unknown>>;
  uuids: string[];
  identity: Identity | null;
}

export const newLoadState = (): LoadState => ({
  acked: new Set(),
  identities: [],
  pending: new Map(),
  requests: 0,
  ok: 0,
  failed: 0,
  retried: 0,
  statuses: new Map(),
});

let serial = 0;

/**
 * A batch of `size` events: page views of an anonymous visitor, a custom event of a known user
 * with `$set` (so both ids have persons), and, every `identifyEvery`-th batch, the `$identify`
 * that merges the two (the anon id's events must then show the user's person).
 */
export function makeBatch(client: number, size: number, identifyEvery = 4): Batch {
  const n = serial++;
  const tag = `${client}-${n}-${Math.random().toString(36).slice(2, 8)}`;
  const identity: Identity | null = n % identifyEvery === 0 ? { anon: `anon-${tag}`, user: `user-${tag}`, email: `user-${tag}@example.com` } : null;
  const events: Array<Record<string, unknown>> = [];
  const anon = identity?.anon ?? `anon-${tag}`;
  const user = identity?.user ?? `user-${tag}`;
  for (let i = 0; i < size; i++) {
    const uuid = uuidv7();
    const last = i === size - 1;
    if (identity && last) {
      events.push({
        event: '$identify',
        distinct_id: identity.user,
        uuid,
        properties: { $anon_distinct_id: identity.anon, $set: { email: identity.email, plan: 'pro' }, $lib: 'crash-test' },
      });
    } else if (i % 5 === 4) {
      events.push({ event: 'upgraded', distinct_id: user, uuid, properties: { $set: { plan: 'free' }, step: i, $lib: 'crash-test' } });
    } else {
      events.push({
        event: '$pageview',
        distinct_id: anon,
        uuid,
        properties: { $current_url: `https://example.com/p/${i}`, $browser: 'Firefox', $os: 'Linux', step: i, $lib: 'crash-test', padding: 'x'.repeat(300) },
      });
    }
  }
  return { events, uuids: events.map((e) => e.uuid as string), identity };
}

export interface LoadOptions {
  url: string;
  apiKey: string;
  clients: number;
  batchSize: number;
  /** Hard limits of one run. */
  maxSeconds: number;
  maxRequestsPerClient: number;
  /** Checked before every request: once true, the loops end after their current request. */
  shouldStop: () => boolean;
}

/** Run the clients until told to stop (or a limit is reached); resolves when every loop ended. */
export async function runBatchClients(state: LoadState, options: LoadOptions): Promise<void> {
  const deadline = Date.now() + options.maxSeconds * 1000;
  const loop = async (client: number) => {
    for (let i = 0; i < options.maxRequestsPerClient && Date.now() < deadline && !options.shouldStop(); i++) {
      const retry = state.pending.get(client);
      const batch = retry ?? makeBatch(client, options.batchSize);
      if (retry) state.retried++;
      state.pending.set(client, batch);
      state.requests++;
      let status = 'error';
      try {
        const response = await fetch(`${options.url}/batch/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ api_key: options.apiKey, batch: batch.events, sent_at: new Date().toISOString() }),
          signal: AbortSignal.timeout(5_000),
        });
        await response.arrayBuffer().catch(() => undefined);
        status = String(response.status);
      } catch {
        // connection refused/reset (the server was killed), timeout: not acknowledged
      }
      state.statuses.set(status, (state.statuses.get(status) ?? 0) + 1);
      if (status === '200') {
        state.ok++;
        for (const u of batch.uuids) state.acked.add(u);
        if (batch.identity) state.identities.push(batch.identity);
        state.pending.delete(client);
      } else {
        state.failed++;
        // Back off a little so a dead server is not spun on.
        await Bun.sleep(status === 'error' ? 20 : 50);
      }
    }
  };
  await Promise.all(Array.from({ length: options.clients }, (_, c) => loop(c)));
}
