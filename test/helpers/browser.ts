import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/**
 * Headless Chromium for the e2e tests: Debian's `chromium` package (installed by `.ci/run`),
 * driven by playwright-core. No browser is ever downloaded.
 */

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * How Chromium runs on these machines (as root, with no network but loopback): without the
 * background-networking flags Chromium keeps trying Google's hosts. AutomationControlled off keeps
 * `navigator.webdriver` false, which posthog-js treats as a bot (and then sends nothing).
 */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-blink-features=AutomationControlled',
];

/** A desktop Chrome user agent: posthog-js drops every event of a `HeadlessChrome` one. */
export const DESKTOP_USER_AGENT =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36';

/**
 * Launch Chromium, or fail loudly: a missing browser must fail the suite, never skip it.
 * Playwright gives every launch a new, empty user-data-dir of its own (deleted on close).
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM_PATH}: the browser end-to-end tests need Debian's chromium package. ` +
        'Install it with `apt-get update && apt-get install -y --no-install-recommends chromium` (.ci/run does this), ' +
        'or point CHROMIUM_PATH at a Chromium binary.',
    );
  }
  // The user agent is set on the command line, not per context: a context's override is not
  // applied while a page unloads, and posthog-js would drop the `$pageleave` of a headless agent.
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: [...CHROMIUM_ARGS, `--user-agent=${DESKTOP_USER_AGENT}`], timeout: 30_000 });
}

/** A browser context that looks like a person's desktop browser. */
export const newDesktopContext = (browser: Browser) =>
  browser.newContext({ viewport: { width: 1280, height: 800 }, locale: 'en-US' });

export interface RecordedRequest {
  method: string;
  url: string;
  resourceType: string;
  headers: Record<string, string>;
  body: Buffer | null;
  status?: number;
}

/** Everything the browser did that a test may want to assert on (or print when it fails). */
export interface BrowserLog {
  requests: RecordedRequest[];
  failed: string[];
  /** Responses with status >= 400 from the origins under test. */
  badResponses: string[];
  console: Array<{ type: string; text: string }>;
  pageErrors: string[];
  /** What went wrong, one line each: failed requests, bad responses, console errors, CORS, page errors. */
  problems(): string[];
  /** `METHOD path status` of every request to `origin`, for failure messages. */
  summary(origin: string): string;
}

/**
 * Record every request of the context (beacons sent while a page unloads included), every failure,
 * every response >= 400 from `watchedOrigins`, and the console of every page.
 */
export function recordBrowser(context: BrowserContext, watchedOrigins: string[]): BrowserLog {
  const byRequest = new Map<object, RecordedRequest>();
  const log: BrowserLog = {
    requests: [],
    failed: [],
    badResponses: [],
    console: [],
    pageErrors: [],
    problems() {
      const consoleProblems = log.console
        .filter((m) => m.type === 'error' || /CORS|Access-Control-Allow|cross-origin/i.test(m.text))
        .map((m) => `console.${m.type}: ${m.text}`);
      return [
        ...log.failed.map((f) => `request failed: ${f}`),
        ...log.badResponses.map((r) => `bad response: ${r}`),
        ...consoleProblems,
        ...log.pageErrors.map((e) => `page error: ${e}`),
      ];
    },
    summary(origin) {
      return log.requests
        .filter((r) => r.url.startsWith(origin))
        .map((r) => `${r.method} ${r.url.slice(origin.length)} ${r.status ?? '(no response)'} [${r.resourceType}]`)
        .join('\n');
    },
  };
  context.on('request', (request) => {
    const entry: RecordedRequest = {
      method: request.method(),
      url: request.url(),
      resourceType: request.resourceType(),
      headers: request.headers(),
      body: request.postDataBuffer(),
    };
    byRequest.set(request, entry);
    log.requests.push(entry);
  });
  context.on('requestfailed', (request) => {
    log.failed.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText ?? 'unknown error'}`);
  });
  context.on('response', (response) => {
    const entry = byRequest.get(response.request());
    if (entry) entry.status = response.status();
    if (response.status() >= 400 && watchedOrigins.some((origin) => response.url().startsWith(origin))) {
      log.badResponses.push(`${response.request().method()} ${response.url()} -> ${response.status()}`);
    }
  });
  context.on('console', (message) => log.console.push({ type: message.type(), text: message.text() }));
  context.on('page', (page) => page.on('pageerror', (error) => log.pageErrors.push(String(error))));
  return log;
}

export interface Beacon {
  url: string;
  /** What `navigator.sendBeacon` answered (true: queued by the browser). */
  queued: boolean;
  /** The body's type as the page gave it (a Blob's type, or the kind of value). */
  type: string;
  size: number;
}

/**
 * Playwright reports no request for `navigator.sendBeacon`, so every page of the context records
 * its beacons in localStorage (they survive the unload that sends them); `readBeacons` reads them
 * from any later page of the same origin.
 */
export async function recordBeacons(context: BrowserContext): Promise<void> {
  await context.addInitScript(() => {
    const nav = navigator as Navigator & { sendBeacon(url: string, data?: unknown): boolean };
    const original = nav.sendBeacon.bind(nav);
    nav.sendBeacon = (url: string, data?: unknown) => {
      const queued = original(url, data as never);
      const blob = data instanceof Blob ? data : null;
      const entry = { url: String(new URL(url, (globalThis as any).location.href)), queued, type: blob ? blob.type : typeof data, size: blob ? blob.size : String(data ?? '').length };
      try {
        localStorage.setItem('__e2eBeacons', JSON.stringify([...JSON.parse(localStorage.getItem('__e2eBeacons') ?? '[]'), entry]));
      } catch {
        // storage full or blocked: the test then sees no beacon and fails
      }
      return queued;
    };
  });
}

export const readBeacons = (page: Page): Promise<Beacon[]> =>
  page.evaluate(() => JSON.parse(localStorage.getItem('__e2eBeacons') ?? '[]'));

/** The installed posthog-js `dist/` directory. */
export const posthogJsDist = () => join(dirname(require.resolve('posthog-js/package.json')), 'dist');

export interface PageServer {
  origin: string;
  stop(): void;
}

/**
 * The test's own web site on another loopback port (so every request to the analytics server is
 * cross-origin, as on a real site): fixed HTML pages plus posthog-js's `array.full.js`.
 */
export function servePages(pages: Record<string, string>): PageServer {
  const dist = posthogJsDist();
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      const { pathname } = new URL(request.url);
      if (pathname in pages) return new Response(pages[pathname], { headers: { 'content-type': 'text/html; charset=utf-8' } });
      if (pathname === '/array.full.js') {
        return new Response(Bun.file(join(dist, 'array.full.js')), { headers: { 'content-type': 'application/javascript; charset=utf-8' } });
      }
      if (pathname === '/favicon.ico') return new Response(null, { status: 204 });
      return new Response('not found', { status: 404 });
    },
  });
  return { origin: `http://127.0.0.1:${server.port}`, stop: () => server.stop(true) };
}

/**
 * PostHog's standard HTML snippet (as the PostHog app shows it): a stub `posthog` that queues
 * calls and loads `<api_host>/static/array.js`, which replays them.
 */
export const POSTHOG_SNIPPET =
  '!function(t,e){var o,n,p,r;e.__SV||(window.posthog&&window.posthog.__loaded)||(window.posthog=e,e._i=[],e.init=function(i,s,a){function g(t,e){var o=e.split(".");2==o.length&&(t=t[o[0]],e=o[1]),t[e]=function(){t.push([e].concat(Array.prototype.slice.call(arguments,0)))}}(p=t.createElement("script")).type="text/javascript",p.crossOrigin="anonymous",p.async=!0,p.src=s.api_host.replace(".i.posthog.com","-assets.i.posthog.com")+"/static/array.js",(r=t.getElementsByTagName("script")[0]).parentNode.insertBefore(p,r);var u=e;for(void 0!==a?u=e[a]=[]:a="posthog",u.people=u.people||[],u.toString=function(t){var e="posthog";return"posthog"!==a&&(e+="."+a),t||(e+=" (stub)"),e},u.people.toString=function(){return u.toString(1)+".people (stub)"},o="init capture register register_once register_for_session unregister unregister_for_session getFeatureFlag getFeatureFlagPayload isFeatureEnabled reloadFeatureFlags updateEarlyAccessFeatureEnrollment getEarlyAccessFeatures on onFeatureFlags onSurveysLoaded onSessionId getSurveys getActiveMatchingSurveys renderSurvey canRenderSurvey canRenderSurveyAsync identify setPersonProperties group resetGroups setPersonPropertiesForFlags resetPersonPropertiesForFlags setGroupPropertiesForFlags resetGroupPropertiesForFlags reset get_distinct_id getGroups get_session_id get_session_replay_url alias set_config startSessionRecording stopSessionRecording sessionRecordingStarted captureException loadToolbar get_property getSessionProperty createPersonProfile opt_in_capturing opt_out_capturing has_opted_in_capturing has_opted_out_capturing clear_opt_in_out_capturing debug getPageViewId captureTraceFeedback captureTraceMetric".split(" "),n=0;n<o.length;n++)g(u,o[n]);e._i.push([i,s,a])},e.__SV=1)}(document,window.posthog||[]);';
