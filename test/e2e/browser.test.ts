import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rm } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import posthogJsPackage from 'posthog-js/package.json';
import { variantFor } from '../../src/core/flags/rollout-hash';
import { POSTHOG_SNIPPET, launchChromium, newDesktopContext, readBeacons, recordBeacons, recordBrowser, servePages, type BrowserLog, type PageServer } from '../helpers/browser';
import { TEST_KEYS } from '../helpers/server-process';
import { createFlag, listEvents, names, personsWhere, startE2eServer, theEvent, waitForEvents, type E2eServer, type StoredEvent } from './api';

/**
 * posthog-js 1.449.2 in headless Chromium against the real server, on a page of another origin:
 * - loaded by PostHog's standard HTML snippet (`<api_host>/static/array.js` and the lazily loaded
 *   `/static/<version>/surveys.js` from this server),
 *   gzip on (remote config's `supportedCompression`), page-exit beacon gzip text/plain;
 * - loaded by `<script src=array.full.js>` from the page's own server, `disable_compression`
 *   (JSON with a CORS preflight), page-exit beacon `?compression=base64`.
 * Each runs: init, `$pageview`, a custom capture, autocapture of a click, flags (`onFeatureFlags`),
 * identify with `$set`/`$set_once`, alias, reset, and `$pageleave` by sendBeacon on navigating away.
 * Then the events are read back through `/api/projects/1/events/`.
 */

const POSTHOG_JS_VERSION = posthogJsPackage.version;

const ROLLOUT_FLAG = { key: 'e2e-everyone', name: 'Everyone', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } };
const OFF_FLAG = { key: 'e2e-nobody', name: 'Nobody', filters: { groups: [{ properties: [], rollout_percentage: 0 }] } };
const MULTIVARIATE_FLAG = {
  key: 'e2e-multivariate',
  name: 'Three variants',
  filters: {
    groups: [{ properties: [], rollout_percentage: 100 }],
    multivariate: {
      variants: [
        { key: 'control', rollout_percentage: 50 },
        { key: 'test-a', rollout_percentage: 25 },
        { key: 'test-b', rollout_percentage: 25 },
      ],
    },
  },
};
const expectedVariant = (distinctId: string) => variantFor(MULTIVARIATE_FLAG, distinctId);

test('the expected variants are computed as PostHog computes them (its published vectors)', () => {
  const posthogVectorFlag = {
    key: 'multivariate-flag',
    filters: {
      groups: [],
      multivariate: {
        variants: [
          { key: 'first-variant', rollout_percentage: 50 },
          { key: 'second-variant', rollout_percentage: 25 },
          { key: 'third-variant', rollout_percentage: 25 },
        ],
      },
    },
  };
  expect(variantFor(posthogVectorFlag, 'example_id')).toBe('first-variant');
  expect(variantFor(posthogVectorFlag, 'other_id')).toBe('third-variant');
});

let server: E2eServer;
let pages: PageServer;
let browser: Browser;

const pageHtml = (head: string, init: string) => `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>e2e shop</title>
${head}
<script>
window.__flagCalls = [];
posthog.init(${JSON.stringify(TEST_KEYS.project)}, ${init});
posthog.onFeatureFlags(function (flags, variants, context) {
  window.__flagCalls.push({ distinctId: posthog.get_distinct_id(), flags: flags, variants: variants, errorsLoading: !!(context && context.errorsLoading) });
});
</script>
</head>
<body>
<h1>Shop</h1>
<button id="buy" class="btn primary" data-attr="buy-button">Buy now</button>
</body>
</html>`;

/** posthog.init options: fast (no batching) and nothing this server does not offer. */
const initOptions = (extra: Record<string, unknown>) =>
  JSON.stringify({
    api_host: server.url,
    request_batching: false,
    capture_pageview: true,
    capture_pageleave: true,
    autocapture: true,
    disable_session_recording: true,
    ...extra,
  }).replace('"__LOADED__"', 'function () { window.__posthogLoaded = true; }');

beforeAll(async () => {
  server = await startE2eServer();
  for (const flag of [ROLLOUT_FLAG, OFF_FLAG, MULTIVARIATE_FLAG]) await createFlag(server, flag);
  pages = servePages({
    '/snippet.html': pageHtml(`<script>${POSTHOG_SNIPPET}</script>`, initOptions({ loaded: '__LOADED__' })),
    '/full.html': pageHtml('<script src="/array.full.js"></script>', initOptions({ loaded: '__LOADED__', disable_compression: true, disable_surveys: true })),
    '/bye.html': '<!doctype html><html><head><title>bye</title></head><body>bye</body></html>',
  });
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  pages?.stop();
  await server?.stop();
  if (server) await rm(server.dataDir, { recursive: true, force: true });
});

interface FlagCall {
  distinctId: string;
  flags: string[];
  variants: Record<string, string | boolean>;
  errorsLoading: boolean;
}

const flagCalls = (page: Page) => page.evaluate(() => (globalThis as any).__flagCalls as FlagCall[]);

/** Wait (bounded) until onFeatureFlags has reported flags for `distinctId`; returns that call. */
async function flagsFor(page: Page, distinctId: string): Promise<FlagCall> {
  await page.waitForFunction((id) => (globalThis as any).__flagCalls.some((c: FlagCall) => c.distinctId === id), distinctId, { timeout: 15_000 });
  const calls = await flagCalls(page);
  return calls.filter((c) => c.distinctId === distinctId).at(-1)!;
}

/** A distinct id, from `prefix-0`, `prefix-1`..., whose variant differs from `other`'s. */
function idWithAnotherVariant(prefix: string, other: string): string {
  for (let i = 0; i < 100; i++) if (expectedVariant(`${prefix}-${i}`) !== expectedVariant(other)) return `${prefix}-${i}`;
  throw new Error('no such id');
}

interface Scenario {
  name: string;
  path: string;
  gzip: boolean;
  /** The page loads posthog-js from the analytics server's /static/array.js. */
  snippet: boolean;
}

const SCENARIOS: Scenario[] = [
  { name: 'HTML snippet (/static/array.js), gzip', path: '/snippet.html', gzip: true, snippet: true },
  { name: 'array.full.js from the site, disable_compression', path: '/full.html', gzip: false, snippet: false },
];

/** The POSTs to the event endpoints, for checking how they were encoded. */
const eventPosts = (log: BrowserLog) =>
  log.requests.filter((r) => r.method === 'POST' && r.url.startsWith(server.url) && /^\/(e|i\/v0\/e)\//.test(new URL(r.url).pathname));

describe.each(SCENARIOS)('posthog-js $name', ({ name, path, gzip, snippet }) => {
  test('captures, autocapture, flags, identify, alias, reset and the page-exit beacon', async () => {
    const context = await newDesktopContext(browser);
    const log = recordBrowser(context, [server.url, pages.origin]);
    await recordBeacons(context);
    const pageUrl = `${pages.origin}${path}`;
    const tag = snippet ? 'snippet' : 'full';
    try {
      const page = await context.newPage();
      await page.goto(pageUrl, { waitUntil: 'load', timeout: 15_000 });
      expect(await page.evaluate(() => (navigator as any).webdriver)).toBe(false);
      await page.waitForFunction(() => (globalThis as any).__posthogLoaded === true, undefined, { timeout: 15_000 });
      expect(await page.evaluate(() => (globalThis as any).posthog.version)).toBe(POSTHOG_JS_VERSION);

      // Flags for the anonymous visitor, through onFeatureFlags.
      const anonId: string = await page.evaluate(() => (globalThis as any).posthog.get_distinct_id());
      const anonFlags = await flagsFor(page, anonId);
      expect(anonFlags.errorsLoading).toBe(false);
      expect(anonFlags.flags.sort()).toEqual([MULTIVARIATE_FLAG.key, ROLLOUT_FLAG.key].sort());
      // posthog-js leaves flags that are off out of `variants`.
      expect(anonFlags.variants).toEqual({ [ROLLOUT_FLAG.key]: true, [MULTIVARIATE_FLAG.key]: expectedVariant(anonId)! });

      // A custom event, then a click that autocapture records.
      await page.evaluate(() => (globalThis as any).posthog.capture('e2e custom', { color: 'red', count: 3, nested: { ok: true } }));
      await page.click('#buy');

      // identify: the anonymous id is merged into the user; flags reload for the user.
      const userId = idWithAnotherVariant(`browser-${tag}-user`, anonId);
      const email = `${tag}@example.com`;
      await page.evaluate(
        ([id, mail]) => (globalThis as any).posthog.identify(id, { email: mail, name: 'Browser User' }, { first_seen: 'today' }),
        [userId, email],
      );
      const userFlags = await flagsFor(page, userId);
      expect(userFlags.variants[ROLLOUT_FLAG.key]).toBe(true);
      expect(userFlags.variants[MULTIVARIATE_FLAG.key]).toBe(expectedVariant(userId)!);
      expect(await page.evaluate((key) => (globalThis as any).posthog.getFeatureFlag(key), MULTIVARIATE_FLAG.key)).toBe(expectedVariant(userId)!);
      expect(await page.evaluate((key) => (globalThis as any).posthog.isFeatureEnabled(key), ROLLOUT_FLAG.key)).toBe(true);
      expect(await page.evaluate((key) => (globalThis as any).posthog.isFeatureEnabled(key), OFF_FLAG.key)).toBe(false);
      await page.evaluate(() => (globalThis as any).posthog.capture('e2e after identify', { step: 2 }));

      // alias: another id for the same person.
      const aliasId = `browser-${tag}-alias`;
      await page.evaluate((id) => (globalThis as any).posthog.alias(id), aliasId);

      // reset: a new anonymous visitor.
      await page.evaluate(() => (globalThis as any).posthog.reset());
      const resetId: string = await page.evaluate(() => (globalThis as any).posthog.get_distinct_id());
      expect(resetId).not.toBe(anonId);
      expect(resetId).not.toBe(userId);
      await page.evaluate(() => (globalThis as any).posthog.capture('e2e after reset', { step: 3 }));
      // Nothing in flight when the page goes: the flags of the new visitor and the event are in.
      await flagsFor(page, resetId);
      await waitForEvents(server, { distinct_id: resetId, event: 'e2e after reset' }, (e) => e.length === 1);
      expect(await readBeacons(page)).toEqual([]);

      // Leaving the page: $pageleave goes out by sendBeacon while the page unloads.
      await page.goto(`${pages.origin}/bye.html`, { waitUntil: 'load', timeout: 15_000 });
      // One beacon, to the event endpoint: gzip as text/plain without a query, or base64 form data.
      const beacons = await readBeacons(page);
      expect(beacons).toHaveLength(1);
      const [beacon] = beacons;
      expect(beacon.queued).toBe(true);
      expect(beacon.url.startsWith(`${server.url}/e/`) || beacon.url.startsWith(`${server.url}/i/v0/e/`)).toBe(true);
      if (gzip) {
        expect(new URL(beacon.url).search).toBe('');
        expect(beacon.type).toBe('text/plain');
      } else {
        expect(new URL(beacon.url).searchParams.get('compression')).toBe('base64');
        expect(beacon.type).toBe('application/x-www-form-urlencoded');
      }

      // ---- Read everything back. ----
      const anonEvents = await waitForEvents(server, { distinct_id: anonId }, (e) => e.length >= 3);
      expect(names(anonEvents)).toEqual(['$autocapture', '$pageview', 'e2e custom']);
      const userEvents = await waitForEvents(server, { distinct_id: userId }, (e) => e.length >= 6);
      // getFeatureFlag/isFeatureEnabled each reported the value read, once per flag.
      expect(names(userEvents)).toEqual(['$create_alias', '$feature_flag_called', '$feature_flag_called', '$feature_flag_called', '$identify', 'e2e after identify']);
      const called = Object.fromEntries(
        userEvents.filter((e) => e.event === '$feature_flag_called').map((e) => [e.properties.$feature_flag, e.properties.$feature_flag_response]),
      );
      expect(called).toEqual({ [MULTIVARIATE_FLAG.key]: expectedVariant(userId)!, [ROLLOUT_FLAG.key]: true, [OFF_FLAG.key]: false });
      const resetEvents = await waitForEvents(server, { distinct_id: resetId }, (e) => e.length >= 2);
      expect(names(resetEvents)).toEqual(['$pageleave', 'e2e after reset']);

      const common = { $lib: 'web', $lib_version: POSTHOG_JS_VERSION, $current_url: pageUrl, token: TEST_KEYS.project };
      for (const event of [...anonEvents, ...userEvents, ...resetEvents]) {
        expect(event.properties).toMatchObject(common);
        expect(event.properties.distinct_id).toBe(event.distinct_id);
        expect(event.properties.$browser).toBe('Chrome');
      }

      const pageview = await theEvent(server, '$pageview', anonId);
      expect(pageview.properties).toMatchObject({ $pathname: path, title: 'e2e shop', $host: new URL(pages.origin).host });

      const custom = await theEvent(server, 'e2e custom', anonId);
      expect(custom.properties).toMatchObject({ color: 'red', count: 3, nested: { ok: true } });
      expect(custom.properties[`$feature/${MULTIVARIATE_FLAG.key}`]).toBe(expectedVariant(anonId)!);

      const click = await theEvent(server, '$autocapture', anonId);
      expect(click.properties.$event_type).toBe('click');
      expect(click.elements_chain).toContain('button.btn.primary');
      expect(click.elements_chain).toContain('attr__id="buy"');
      expect(click.elements_chain).toContain('attr__data-attr="buy-button"');
      expect(click.elements[0]).toMatchObject({ tag_name: 'button', attr_id: 'buy', text: 'Buy now', attr_class: ['btn', 'primary'] });
      expect(click.elements.map((e) => e.tag_name)).toEqual(['button', 'body']);

      const identify = await theEvent(server, '$identify', userId);
      expect(identify.properties.$anon_distinct_id).toBe(anonId);
      expect(identify.properties.$set).toMatchObject({ email, name: 'Browser User' });
      expect(identify.properties.$set_once).toMatchObject({ first_seen: 'today' });

      // Events after identify carry the user's flag values.
      const afterIdentify = await theEvent(server, 'e2e after identify', userId);
      expect(afterIdentify.properties).toMatchObject({
        step: 2,
        [`$feature/${ROLLOUT_FLAG.key}`]: true,
        [`$feature/${MULTIVARIATE_FLAG.key}`]: expectedVariant(userId)!,
      });
      expect([...afterIdentify.properties.$active_feature_flags].sort()).toEqual([MULTIVARIATE_FLAG.key, ROLLOUT_FLAG.key].sort());

      const alias = await theEvent(server, '$create_alias', userId);
      expect(alias.properties.alias).toBe(aliasId);

      const afterReset = await theEvent(server, 'e2e after reset', resetId);
      expect(afterReset.properties.step).toBe(3);
      const pageleave = await theEvent(server, '$pageleave', resetId);
      expect(pageleave.properties.$pathname).toBe(path);

      // Person merges: anonymous, identified and alias ids are one identified person with the
      // $set and $set_once properties; the visitor after reset is someone else.
      for (const event of [...anonEvents, ...userEvents]) {
        expect(event.person).toMatchObject({ is_identified: true, properties: { email, name: 'Browser User' } });
      }
      expect(new Set([...anonEvents, ...userEvents].map((e) => JSON.stringify(e.person))).size).toBe(1);
      for (const event of resetEvents) expect(event.person?.properties.email).toBeUndefined();

      const persons = await personsWhere(server, 'email', email);
      expect(persons).toHaveLength(1);
      expect([...persons[0].distinct_ids].sort()).toEqual([aliasId, anonId, userId].sort());
      expect(persons[0].properties).toMatchObject({ email, name: 'Browser User', first_seen: 'today' });
      const byPerson = await listEvents(server, { person_id: persons[0].uuid });
      expect(names(byPerson).filter((n) => n !== '$feature_flag_called')).toEqual([
        '$autocapture',
        '$create_alias',
        '$identify',
        '$pageview',
        'e2e after identify',
        'e2e custom',
      ]);

      // How the requests went: the bodies were encoded as configured, the beacon was used.
      // The first $pageview can leave before remote config arrives (plain JSON); after it, gzip
      // bodies (magic bytes, text/plain) or, with compression off, JSON.
      const posts = eventPosts(log);
      expect(posts.length).toBeGreaterThanOrEqual(10);
      for (const post of posts.slice(1)) {
        if (gzip) {
          expect(post.body?.subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));
          expect(post.headers['content-type']).toBe('text/plain');
        } else {
          expect(post.headers['content-type']).toBe('application/json');
          expect(JSON.parse(post.body!.toString()).api_key).toBe(TEST_KEYS.project);
        }
      }
      const served = log.requests.filter((r) => r.url.startsWith(server.url)).map((r) => new URL(r.url).pathname);
      expect(served).toContain(`/array/${TEST_KEYS.project}/config.js`);
      if (snippet) {
        expect(served).toContain('/static/array.js');
        // array.js loads the surveys extension lazily from the same host, by version.
        expect(served).toContain(`/static/${POSTHOG_JS_VERSION}/surveys.js`);
      } else {
        expect(served.filter((p) => p.startsWith('/static/'))).toEqual([]);
      }

      // No failed request, no error response, no CORS complaint, no page error.
      expect({ scenario: name, problems: log.problems() }).toEqual({ scenario: name, problems: [] });
    } catch (error) {
      console.error(server.diagnostics());
      console.error(`[${name}] requests to the server:\n${log.summary(server.url)}\nconsole:\n${log.console.map((m) => `${m.type}: ${m.text}`).join('\n')}`);
      throw error;
    } finally {
      await context.close();
    }
  }, 60_000);
});

test('every stored event came from posthog-js, none twice (retries would duplicate)', async () => {
  const all = await listEvents(server, {});
  const ids = all.map((e: StoredEvent) => e.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(all.filter((e) => e.properties.$lib === 'web').length).toBe(all.length);
}, 30_000);
