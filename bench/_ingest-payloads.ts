import { gzipSync } from 'node:zlib';
import { BENCH_KEYS } from './_http';

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

export function seeded(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function createWebEvents(seed = 1, options: { users?: number } = {}) {
  const rand = seeded(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const hex = (n: number) => {
    let out = '';
    for (let i = 0; i < n; i++) out += '0123456789abcdef'[Math.floor(rand() * 16)];
    return out;
  };
  const uuid7 = (ms: number) => {
    const t = ms.toString(16).padStart(12, '0');
    return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${hex(3)}-${pick(['8', '9', 'a', 'b'])}${hex(3)}-${hex(12)}`;
  };
  const now = Date.now();
  const userCount = options.users ?? 5_000;
  const users = Array.from({ length: userCount }, (_, i) => ({
    id: `user-${i}-${hex(8)}`,
    anon: uuid7(now - Math.floor(rand() * 86_400_000 * 30)),
    email: `person${i}@example.com`,
  }));
  const browsers = ['Chrome', 'Firefox', 'Safari', 'Edge', 'Opera'];
  const oses = ['Mac OS X', 'Windows', 'Linux', 'iOS', 'Android'];
  const names = ['$pageview', '$pageview', '$pageview', '$autocapture', '$autocapture', '$pageleave', 'clicked_button', 'signed_up', 'purchase'];
  const paths = ['/', '/pricing', '/docs/getting-started', '/blog/how-we-built-it', '/account/settings', '/checkout'];
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
    const browser = pick(browsers);
    const os = pick(oses);
    const path = pick(paths);
    const ts = now - Math.floor(rand() * 60_000);
    const properties: Record<string, unknown> = {
      $os: os,
      $os_version: `${Math.floor(rand() * 15)}.${Math.floor(rand() * 10)}`,
      $browser: browser,
      $browser_version: 100 + Math.floor(rand() * 30),
      $device_type: pick(['Desktop', 'Mobile', 'Tablet']),
      $current_url: `https://app.example.com${path}?utm_source=${pick(['google', 'twitter', 'newsletter'])}&ref=${hex(6)}`,
      $host: 'app.example.com',
      $pathname: path,
      $screen_height: pick([768, 900, 1080, 1440]),
      $screen_width: pick([1366, 1440, 1920, 2560]),
      $viewport_height: 600 + Math.floor(rand() * 400),
      $viewport_width: 1000 + Math.floor(rand() * 900),
      $lib: 'web',
      $lib_version: '1.149.2',
      $insert_id: hex(16),
      $time: ts / 1000,
      distinct_id: distinctId,
      $device_id: user.anon,
      $referrer: pick(['$direct', 'https://www.google.com/', 'https://news.ycombinator.com/']),
      $referring_domain: pick(['$direct', 'www.google.com', 'news.ycombinator.com']),
      $session_id: pick(sessions),
      $window_id: uuid7(ts - 60_000),
      $pageview_id: uuid7(ts - 5_000),
      $timezone: pick(['Europe/Berlin', 'America/New_York', 'Asia/Tokyo']),
      $raw_user_agent: `Mozilla/5.0 (${os}) AppleWebKit/537.36 (KHTML, like Gecko) ${browser}/${100 + Math.floor(rand() * 30)}.0.0.0 Safari/537.36`,
      plan: pick(['free', 'pro', 'enterprise', null]),
    };
    if (identify) {
      properties.$anon_distinct_id = user.anon;
      properties.$set = { email: user.email, plan: pick(['free', 'pro', 'enterprise']) };
      properties.$set_once = { first_seen_path: path };
    } else if (setProps) {
      properties.$set = { last_browser: browser, plan: pick(['free', 'pro', 'enterprise']) };
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
export function captureBodies(count: number, seed = 11): Body[] {
  const next = createWebEvents(seed);
  return Array.from({ length: count }, () => ({ body: Buffer.from(JSON.stringify({ api_key: BENCH_KEYS.project, ...next() })), events: 1 }));
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
export function batchBodies(count: number, targetBytes: number, options: { gzip: boolean; seed?: number }): Body[] {
  const next = createWebEvents(options.seed ?? 13);
  const probe = Array.from({ length: 50 }, next);
  const perEvent = JSON.stringify(probe).length / probe.length;
  const events = Math.max(1, Math.round(targetBytes / perEvent));
  return Array.from({ length: count }, () => {
    const batch = Array.from({ length: events }, next);
    const json = Buffer.from(JSON.stringify({ api_key: BENCH_KEYS.project, batch, sent_at: new Date().toISOString() }));
    return { body: options.gzip ? gzipSync(json) : json, events };
  });
}

export const averageBytes = (bodies: readonly Body[]) => Math.round(bodies.reduce((n, b) => n + b.body.length, 0) / bodies.length);
