import { hotValuesOf, type StoredEventRow } from '../src/core/events/columns';

/**
 * Seeded generator of realistic PostHog web events (~1 KB, ~20-25 properties), as the ingest
 * layer hands them to storage: properties serialized once, hot values pre-extracted.
 */
/** A seeded uniform [0, 1) generator (mulberry32): every bench's data is the same run to run. */
export function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Random helpers over one seeded stream, shared by the bench generators. */
export function randomKit(rand: () => number) {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const hex = (n: number) => {
    let out = '';
    for (let i = 0; i < n; i++) out += '0123456789abcdef'[Math.floor(rand() * 16)];
    return out;
  };
  const uuid7 = (ms: number) => {
    const t = ms.toString(16).padStart(12, '0');
    return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${hex(3)}-${pick(['8', '9', 'a', 'b'])}${hex(3)}-${hex(12)}`;
  };
  return { rand, pick, hex, uuid7 };
}

export type RandomKit = ReturnType<typeof randomKit>;

const BROWSERS = ['Chrome', 'Firefox', 'Safari', 'Edge', 'Opera'];
const OSES = ['Mac OS X', 'Windows', 'Linux', 'iOS', 'Android'];
export const PATHS = ['/', '/pricing', '/docs/getting-started', '/blog/how-we-built-it', '/account/settings', '/checkout'];

/** The ~25 properties posthog-js sends with a web event (no `$set`): what both generators share. */
export function webProperties(k: RandomKit, at: { ts: number; distinctId: string; deviceId: string; sessionId: string; path: string }): Record<string, unknown> {
  const { rand, pick, hex, uuid7 } = k;
  const browser = pick(BROWSERS);
  const os = pick(OSES);
  return {
    $os: os,
    $os_version: `${Math.floor(rand() * 15)}.${Math.floor(rand() * 10)}`,
    $browser: browser,
    $browser_version: 100 + Math.floor(rand() * 30),
    $device_type: pick(['Desktop', 'Mobile', 'Tablet']),
    $current_url: `https://app.example.com${at.path}?utm_source=${pick(['google', 'twitter', 'newsletter'])}&ref=${hex(6)}`,
    $host: 'app.example.com',
    $pathname: at.path,
    $screen_height: pick([768, 900, 1080, 1440]),
    $screen_width: pick([1366, 1440, 1920, 2560]),
    $viewport_height: 600 + Math.floor(rand() * 400),
    $viewport_width: 1000 + Math.floor(rand() * 900),
    $lib: 'web',
    $lib_version: '1.149.2',
    $insert_id: hex(16),
    $time: at.ts / 1000,
    distinct_id: at.distinctId,
    $device_id: at.deviceId,
    $referrer: pick(['$direct', 'https://www.google.com/', 'https://news.ycombinator.com/']),
    $referring_domain: pick(['$direct', 'www.google.com', 'news.ycombinator.com']),
    $session_id: at.sessionId,
    $window_id: uuid7(at.ts - 60_000),
    $pageview_id: uuid7(at.ts - 5_000),
    $timezone: pick(['Europe/Berlin', 'America/New_York', 'Asia/Tokyo']),
    $raw_user_agent: `Mozilla/5.0 (${os}) AppleWebKit/537.36 (KHTML, like Gecko) ${browser}/${100 + Math.floor(rand() * 30)}.0.0.0 Safari/537.36`,
    plan: pick(['free', 'pro', 'enterprise', null]),
  };
}

export function createEventGenerator(seed = 42, options: { teams?: number; startMs?: number } = {}) {
  const kit = randomKit(seeded(seed));
  const { rand, pick, hex, uuid7 } = kit;
  const teams = options.teams ?? 3;
  let clock = options.startMs ?? Date.UTC(2024, 0, 1);
  const events = ['$pageview', '$autocapture', '$pageleave', 'signed_up', 'purchase', '$identify', 'clicked_button'];
  const users = Array.from({ length: 2000 }, () => `user-${hex(10)}`);
  const sessions = Array.from({ length: 500 }, () => uuid7(clock - Math.floor(rand() * 3_600_000)));

  return function next(): StoredEventRow {
    clock += Math.floor(rand() * 20);
    const distinctId = pick(users);
    const props = {
      ...webProperties(kit, { ts: clock, distinctId, deviceId: uuid7(clock - 86_400_000), sessionId: pick(sessions), path: pick(PATHS) }),
      $set: { email: `${distinctId}@example.com` },
    };
    return {
      uuid: uuid7(clock),
      teamId: 1 + Math.floor(rand() * teams),
      event: pick(events),
      distinctId,
      personId: null,
      properties: JSON.stringify(props),
      timestamp: clock,
      createdAt: clock + 50,
      elementsChain: '',
      hot: hotValuesOf(props),
    };
  };
}
