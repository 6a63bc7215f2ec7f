import { gzipSync } from 'node:zlib';
import { BENCH_KEYS } from './_http';
import { PATHS, randomKit, seeded, webProperties } from './_events';

/**
 * Seeded request bodies for the ingest bench, shaped as the SDKs send them: ~1 KB web events
 * (posthog-js properties), single events for `/capture/` (posthog-node shape, key at the top)
 * and `/e/` (posthog-js shape, key in `properties.token`), and `{api_key, batch, sent_at}` bodies
 * of a target size for `/batch/`, plain or gzipped.
 *
 * Distinct ids come from a pool of users and anonymous visitors, with `$set` on some events and
 * `$identify` (+ `$anon_distinct_id`) merges on others, so the person path does real work.
 * Bodies carry no `uuid`: a pool of bodies is sent over and over, and repeated client uuids would
 * (rightly) be de-duplicated, which would make stored ≠ acknowledged by design. Every event of
 * every body is valid, so each 200 acknowledges exactly `events` events.
 */

export interface Body {
  body: Buffer;
  events: number;
}

export function createWebEvents(seed = 1, options: { users?: number } = {}) {
  const kit = randomKit(seeded(seed));
  const { rand, pick, hex, uuid7 } = kit;
  const now = Date.now();
  const userCount = options.users ?? 5_000;
  const users = Array.from({ length: userCount }, (_, i) => ({
    id: `user-${i}-${hex(8)}`,
    anon: uuid7(now - Math.floor(rand() * 86_400_000 * 30)),
    email: `person${i}@example.com`,
  }));
  const names = ['$pageview', '$pageview', '$pageview', '$autocapture', '$autocapture', '$pageleave', 'clicked_button', 'signed_up', 'purchase'];
  const sessions = Array.from({ length: 500 }, () => uuid7(now - Math.floor(rand() * 3_600_000)));

  /** One event object (no token); `kind` decides the person work it carries. */
  return function next(): Record<string, unknown> {
    const user = pick(users);
    const r = rand();
    // ~30% anonymous visitors, ~2% identify (anon → user merge), ~5% $set on a known user.
    const identify = r < 0.02;
    const anonymous = !identify && r < 0.32;
    const setProps = !identify && !anonymous && r < 0.37;
    const distinctId = anonymous ? user.anon : user.id;
    const path = pick(PATHS);
    const ts = now - Math.floor(rand() * 60_000);
    const properties = webProperties(kit, { ts, distinctId, deviceId: user.anon, sessionId: pick(sessions), path });
    if (identify) {
      properties.$anon_distinct_id = user.anon;
      properties.$set = { email: user.email, plan: pick(['free', 'pro', 'enterprise']) };
      properties.$set_once = { first_seen_path: path };
    } else if (setProps) {
      properties.$set = { last_browser: properties.$browser, plan: pick(['free', 'pro', 'enterprise']) };
    }
    return {
      event: identify ? '$identify' : pick(names),
      distinct_id: distinctId,
      properties,
      timestamp: new Date(ts).toISOString(),
    };
  };
}

/** Single events for `/capture/` (posthog-node: `api_key` at the top level). */
export function captureBodies(count: number, seed = 11, token: string = BENCH_KEYS.project): Body[] {
  const next = createWebEvents(seed);
  return Array.from({ length: count }, () => ({ body: Buffer.from(JSON.stringify({ api_key: token, ...next() })), events: 1 }));
}

/** Single events for `/e/` (posthog-js: the key in `properties.token`, no top-level distinct_id). */
export function eBodies(count: number, seed = 12): Body[] {
  const next = createWebEvents(seed);
  return Array.from({ length: count }, () => {
    const e = next();
    const { distinct_id: _d, ...rest } = e;
    return { body: Buffer.from(JSON.stringify({ ...rest, properties: { ...(e.properties as object), token: BENCH_KEYS.project } })), events: 1 };
  });
}

/** `{api_key, batch, sent_at}` bodies of about `targetBytes` each (same event count in every body). */
export function batchBodies(count: number, targetBytes: number, options: { gzip: boolean; seed?: number; token?: string }): Body[] {
  const next = createWebEvents(options.seed ?? 13);
  const probe = Array.from({ length: 50 }, next);
  const perEvent = JSON.stringify(probe).length / probe.length;
  const events = Math.max(1, Math.round(targetBytes / perEvent));
  return Array.from({ length: count }, () => {
    const batch = Array.from({ length: events }, next);
    const json = Buffer.from(JSON.stringify({ api_key: options.token ?? BENCH_KEYS.project, batch, sent_at: new Date().toISOString() }));
    return { body: options.gzip ? gzipSync(json) : json, events };
  });
}

export const averageBytes = (bodies: readonly Body[]) => Math.round(bodies.reduce((n, b) => n + b.body.length, 0) / bodies.length);
