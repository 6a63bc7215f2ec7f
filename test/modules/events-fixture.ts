import { expect } from 'bun:test';
import { uuidv7 } from '../../src/ids';
import { createOtherAccount, createTestApp, type TestApp, type TestStorageOptions } from '../helpers/test-app';

/**
 * The events the API tests read, ingested through `POST /batch/` like any SDK's: project A
 * (the bootstrap one) gets a1–a7, a second project of the same organization gets c1, and another
 * organization's project gets b1. The clock is fixed at NOW; a7 is stamped an hour ahead, so the
 * default upper bound (now + 5 s) hides it.
 */
export const NOW = new Date('2024-01-10T12:00:00.000Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);

export interface FixtureEvent {
  key: string;
  event: string;
  distinct_id: string;
  timestamp: Date;
  properties: Record<string, unknown>;
  uuid: string;
}

const ev = (key: string, event: string, distinctId: string, timestamp: Date, properties: Record<string, unknown>): FixtureEvent => ({
  key,
  event,
  distinct_id: distinctId,
  timestamp,
  properties,
  uuid: uuidv7(timestamp.getTime()),
});

/**
 * The properties as stored: ingestion moves `$elements_chain` to its own column and, as PostHog
 * does, adds `$set`/`$set_once` for the initial URL.
 */
export function storedProperties(e: FixtureEvent): Record<string, unknown> {
  const { $elements_chain: _chain, ...props } = e.properties;
  if (typeof props.$current_url !== 'string') return props;
  return { ...props, $set: { $current_url: props.$current_url }, $set_once: { $initial_current_url: props.$current_url } };
}

const ALICE = { is_identified: true, distinct_ids: ['alice'], properties: { email: 'alice@example.com', name: 'Alice' } };
const anonymous = (id: string) => ({ is_identified: false, distinct_ids: [id], properties: {} });
export const PERSONS: Record<string, unknown> = { alice: ALICE, 'alice-anon': ALICE, bob: anonymous('bob'), carol: anonymous('carol') };

/** The event object the API returns for a fixture event (elements as parsed from CHAIN). */
export function eventObject(e: FixtureEvent, person: unknown = PERSONS[e.distinct_id] ?? null) {
  const chain = typeof e.properties.$elements_chain === 'string' ? e.properties.$elements_chain : '';
  const ms = e.timestamp.getUTCMilliseconds();
  return {
    id: e.uuid,
    distinct_id: e.distinct_id,
    properties: storedProperties(e),
    event: e.event,
    timestamp: `${e.timestamp.toISOString().slice(0, 19)}${ms ? `.${String(ms).padStart(3, '0')}000` : ''}+00:00`,
    person,
    elements: chain === CHAIN ? CHAIN_ELEMENTS : [],
    elements_chain: chain,
  };
}

export const CHAIN_ELEMENTS = [
  {
    event: null, text: 'Sign up', tag_name: 'a', attr_class: ['btn', 'btn-primary'], href: '/signup', attr_id: null,
    nth_child: 2, nth_of_type: 1, attributes: { attr__class: 'btn btn-primary' }, order: 0,
  },
  { event: null, text: null, tag_name: 'div', attr_class: ['hero'], href: null, attr_id: null, nth_child: 1, nth_of_type: 1, attributes: {}, order: 1 },
];

export const CHAIN = 'a.btn.btn-primary:attr__class="btn btn-primary"href="/signup"nth-child="2"nth-of-type="1"text="Sign up";div.hero:nth-child="1"nth-of-type="1"';
export const TRICKY_VALUE = 'a,"b"\nc';

export const A_EVENTS: FixtureEvent[] = [
  ev('a1', '$pageview', 'alice-anon', at(-5 * DAY), { $current_url: 'https://example.com/a', plan: 'pro', price: 10 }),
  ev('a2', '$identify', 'alice', at(-4 * DAY), { $anon_distinct_id: 'alice-anon', $set: { email: 'alice@example.com', name: 'Alice' } }),
  ev('a3', '$autocapture', 'alice', at(-3 * DAY + 123), { $elements_chain: CHAIN, $event_type: 'click' }),
  ev('a4', 'signup', 'bob', at(-2 * DAY), { plan: 'free', price: '25.5', 'quote"d,key': TRICKY_VALUE }),
  ev('a5', 'purchase', 'bob', at(-1 * DAY), { price: 100, tags: ['x', 'y'], nested: { deep: true }, plan: 'pro' }),
  ev('a6', '$pageview', 'carol', at(-1 * HOUR), { $current_url: 'https://example.com/b', plan: 'enterprise' }),
  ev('a7', '$pageview', 'carol', at(HOUR), { $current_url: 'https://example.com/future' }),
];
export const B_EVENT = ev('b1', 'secret', 'eve', at(-HOUR), { secret: 'xyz', plan: 'pro' });
export const C_EVENT = ev('c1', '$pageview', 'carol', at(-HOUR), { plan: 'other-project' });

/** Visible by default (a7 is in the future), newest first. */
export const VISIBLE = A_EVENTS.filter((e) => e.key !== 'a7').reverse();

export const byKey = (key: string): FixtureEvent => [...A_EVENTS, B_EVENT, C_EVENT].find((e) => e.key === key)!;

export interface EventsFixture {
  t: TestApp;
  /** Project A. */
  projectId: number;
  /** Another project of A's organization. */
  projectC: number;
  /** The other organization: its project and personal key. */
  other: { projectId: number; key: string; token: string };
  ingest(token: string, events: ReadonlyArray<Omit<FixtureEvent, 'key'>>): Promise<void>;
  list<T = any>(query?: Record<string, string> | string, key?: string): Promise<{ status: number; body: T; headers: Headers }>;
  path(query?: Record<string, string> | string): string;
  close(): Promise<void>;
}

export async function openEventsFixture(env: Record<string, string> = {}, storageOptions: TestStorageOptions = {}): Promise<EventsFixture> {
  const t = await createTestApp(env, () => NOW, undefined, {}, storageOptions);
  const projectId = t.account.project.id;
  const other = await createOtherAccount(t);
  const projectC = await t.deps.storage.management.createProject(t.account.organization.id, 'Second project', {});
  const ingest = async (token: string, events: ReadonlyArray<Omit<FixtureEvent, 'key'>>) => {
    const batch = events.map((e) => ({ event: e.event, distinct_id: e.distinct_id, timestamp: e.timestamp.toISOString(), uuid: e.uuid, properties: e.properties }));
    const res = await t.call('POST', '/batch/', { key: null, body: { api_key: token, batch } });
    expect(res.status).toBe(200);
  };
  await ingest(t.account.project.apiToken, A_EVENTS);
  await ingest(other.project.apiToken, [B_EVENT]);
  await ingest(projectC.apiToken, [C_EVENT]);
  const path = (query: Record<string, string> | string = {}) => {
    const qs = typeof query === 'string' ? query : new URLSearchParams(query).toString();
    return `/api/projects/${projectId}/events/${qs ? `?${qs}` : ''}`;
  };
  return {
    t,
    projectId,
    projectC: projectC.id,
    other: { projectId: other.project.id, key: other.personalApiKey.value, token: other.project.apiToken },
    ingest,
    path,
    list: (query, key) => t.json('GET', path(query), key === undefined ? {} : { key }),
    close: () => t.close(),
  };
}

/** An absolute link of the test app as a path plus query, to call it again. */
export const relative = (link: string) => {
  const url = new URL(link);
  return `${url.pathname}${url.search}`;
};

export interface ListPage {
  count: number;
  next: string | null;
  previous: string | null;
  results: Array<{ id: string }>;
}

/** Every page of a listing, following `next` links (each answered 200), at most `maxPages`. */
export async function allPages(f: EventsFixture, query: Record<string, string>, maxPages = 100): Promise<ListPage[]> {
  const pages: ListPage[] = [];
  let res = await f.list(query);
  for (let i = 0; i < maxPages; i++) {
    expect(res.status).toBe(200);
    pages.push(res.body);
    if (!res.body.next) break;
    res = await f.t.json('GET', relative(res.body.next));
  }
  return pages;
}

/** Record the SQL of every statement the events API streams from the store until `restore()`. */
export function recordStatements(f: EventsFixture): { statements: string[]; restore(): void } {
  const store = f.t.deps.storage.events;
  const statements: string[] = [];
  const original = store.streamQuery.bind(store);
  store.streamQuery = (sql, params, options) => {
    statements.push(sql);
    return original(sql, params, options);
  };
  return { statements, restore: () => void (store.streamQuery = original) };
}
