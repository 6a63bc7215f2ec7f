import { hotValuesOf, type StoredEventRow } from '../src/core/events/columns';

/**
 * Seeded generator of realistic PostHog web events (~1 KB, ~20-25 properties), as the ingest
 * layer hands them to storage: properties serialized once, hot values pre-extracted.
 */
export function createEventGenerator(seed = 42, options: { teams?: number; startMs?: number } = {}) {
  let s = seed >>> 0;
  const rand = () => {
    // mulberry32
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
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
  const teams = options.teams ?? 3;
  let clock = options.startMs ?? Date.UTC(2024, 0, 1);
  const browsers = ['Chrome', 'Firefox', 'Safari', 'Edge', 'Opera'];
  const oses = ['Mac OS X', 'Windows', 'Linux', 'iOS', 'Android'];
  const events = ['$pageview', '$autocapture', '$pageleave', 'signed_up', 'purchase', '$identify', 'clicked_button'];
  const paths = ['/', '/pricing', '/docs/getting-started', '/blog/how-we-built-it', '/account/settings', '/checkout'];
  const users = Array.from({ length: 2000 }, () => `user-${hex(10)}`);
  const sessions = Array.from({ length: 500 }, () => uuid7(clock - Math.floor(rand() * 3_600_000)));

  return function next(): StoredEventRow {
    clock += Math.floor(rand() * 20);
    const browser = pick(browsers);
    const os = pick(oses);
    const path = pick(paths);
    const url = `https://app.example.com${path}?utm_source=${pick(['google', 'twitter', 'newsletter'])}&ref=${hex(6)}`;
    const session = pick(sessions);
    const distinctId = pick(users);
    const props = {
      $os: os,
      $os_version: `${Math.floor(rand() * 15)}.${Math.floor(rand() * 10)}`,
      $browser: browser,
      $browser_version: 100 + Math.floor(rand() * 30),
      $device_type: pick(['Desktop', 'Mobile', 'Tablet']),
      $current_url: url,
      $host: 'app.example.com',
      $pathname: path,
      $screen_height: pick([768, 900, 1080, 1440]),
      $screen_width: pick([1366, 1440, 1920, 2560]),
      $viewport_height: 600 + Math.floor(rand() * 400),
      $viewport_width: 1000 + Math.floor(rand() * 900),
      $lib: 'web',
      $lib_version: '1.149.2',
      $insert_id: hex(16),
      $time: clock / 1000,
      distinct_id: distinctId,
      $device_id: uuid7(clock - 86_400_000),
      $referrer: pick(['$direct', 'https://www.google.com/', 'https://news.ycombinator.com/']),
      $referring_domain: pick(['$direct', 'www.google.com', 'news.ycombinator.com']),
      $session_id: session,
      $window_id: uuid7(clock - 60_000),
      $pageview_id: uuid7(clock - 5_000),
      $timezone: pick(['Europe/Berlin', 'America/New_York', 'Asia/Tokyo']),
      $raw_user_agent: `Mozilla/5.0 (${os}) AppleWebKit/537.36 (KHTML, like Gecko) ${browser}/${100 + Math.floor(rand() * 30)}.0.0.0 Safari/537.36`,
      plan: pick(['free', 'pro', 'enterprise', null]),
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
