/**
 * One raw event → the event we store, or the reason it is dropped. Follows PostHog's capture and
 * ingestion (Django `capture.py`, plugin-server `normalizeEvent`/`prepareEvent`, Rust
 * `timestamp.rs`), except where our spec wins: an event with no name or no (or an empty)
 * distinct_id is dropped, not a 400 for the whole request.
 *
 * Top-level fields of the spec's sample forms (alias, capture, identify, page, screen) are kept as
 * properties, so nothing they carry is lost; a property the client set itself wins:
 *   type → `$type`, context → `$context`, messageId → `$message_id`, category → `$category`,
 *   name → `$name`.
 * `library`/`library_version` (posthog-node 3/4) repeat `$lib`/`$lib_version` and are not kept.
 */
import { elementsChainFrom } from './elements-chain';
import { resolveEventTime } from './event-time';
import type { RawEvent } from './extract-events';
import { personEventOf } from './person-event';

export interface NormalizeContext {
  /** When the server received the request: the reference for clock-skew correction. */
  now: Date;
  /** The request's send time by the client's clock (`sent_at` / `_`). */
  sentAt: Date | null;
  /** `sentAt` as ISO text, when the caller made it once for a request's events (else made per event). */
  sentAtText?: string;
  ip: string | null;
  anonymizeIps: boolean;
  newUuid: () => string;
}

export interface NormalizedEvent {
  uuid: string;
  event: string;
  distinctId: string;
  /** Stored properties: `$set`/`$set_once` merged in, `$ip`/`$sent_at` added, `$elements*` moved out. */
  properties: Record<string, unknown>;
  /** Epoch milliseconds, UTC. */
  timestamp: number;
  elementsChain: string;
  /** Person updates the event asks for (empty when `processPerson` is false). */
  set: Record<string, unknown>;
  setOnce: Record<string, unknown>;
  unset: string[];
  /** `$identify`: the anonymous id to merge into `distinctId`. */
  anonDistinctId: string | null;
  /** `$create_alias` / `$merge_dangerously`: the id to merge into `distinctId`. */
  alias: string | null;
  /** False when the client sent `$process_person_profile: false`: no person is created or changed. */
  processPerson: boolean;
  /** `properties.$groups` (group type → key, keys as strings): the groups the event is attributed to. */
  groups: Record<string, string>;
}

export type DropReason = 'missing_event_name' | 'missing_distinct_id' | 'invalid_properties' | 'performance_event';
export type NormalizeResult = { ok: NormalizedEvent } | { drop: DropReason };

const MAX_ID_LENGTH = 200;
const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const SAMPLE_FIELDS: Record<string, string> = {
  type: '$type',
  context: '$context',
  messageId: '$message_id',
  category: '$category',
  name: '$name',
};
// plugin-server `eventToPersonProperties`: copied to `$set` and, as `$initial_<key>`, to `$set_once`.
const PERSON_PROPERTIES_FROM_EVENT = [
  '$app_build', '$app_name', '$app_namespace', '$app_version',
  '$browser', '$browser_version', '$device_type', '$current_url', '$pathname', '$os', '$os_version',
  '$referring_domain', '$referrer',
  'utm_source', 'utm_medium', 'utm_campaign', 'utm_content', 'utm_name', 'utm_term',
  'gclid', 'gad_source', 'gbraid', 'wbraid', 'fbclid', 'msclkid',
];
// Built once: this runs for every event.
const INITIAL_KEYS: ReadonlyArray<readonly [string, string]> = PERSON_PROPERTIES_FROM_EVENT.map((key) => [key, `$initial_${key.replace('$', '')}`]);
const SAMPLE_FIELD_ENTRIES = Object.entries(SAMPLE_FIELDS);
const WITHOUT_PERSON_PROPERTIES = new Set(['$snapshot']);

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function normalizeEvent(raw: RawEvent, ctx: NormalizeContext): NormalizeResult {
  const event = readEventName(raw.event);
  if (event === null) return { drop: 'missing_event_name' };
  // PostHog's capture accepts and drops these (its old performance tracking), so SDKs that still send them get a 200.
  if (event === '$performance_event') return { drop: 'performance_event' };
  if (raw.properties !== undefined && raw.properties !== null && !isObject(raw.properties)) return { drop: 'invalid_properties' };
  const distinctId = eventDistinctId(raw);
  if (distinctId === null) return { drop: 'missing_distinct_id' };

  const properties = buildProperties(raw, event, ctx);
  const elementsChain = elementsChainFrom(properties);
  delete properties.$elements_chain;
  delete properties.$elements;

  const processPerson = properties.$process_person_profile !== false;
  if (!processPerson) {
    // PostHog drops person updates of personless events, so they do not leak into stored properties.
    delete properties.$set;
    delete properties.$set_once;
  }
  const now = ctx.now.getTime();
  const timestamp = resolveEventTime(
    { timestamp: raw.timestamp, offset: raw.offset, ignoreSentAt: properties.$ignore_sent_at === true },
    now,
    ctx.sentAt?.getTime() ?? null,
  );
  const uuid = readUuid(raw.uuid) ?? ctx.newUuid();
  return { ok: { ...personEventOf({ uuid, event, distinctId, timestamp }, properties), elementsChain, groups: readGroups(properties.$groups) } };
}

/**
 * The distinct ids whose persons an event may change: its own, and the other side of an
 * `$identify` or alias. Read before processing (so a flag check can wait for those changes);
 * a superset is harmless, so no validation beyond reading the id is done.
 */
export function distinctIdsNamed(raw: RawEvent, into: string[] = []): string[] {
  const own = eventDistinctId(raw);
  if (own !== null) into.push(own);
  const properties = isObject(raw.properties) ? raw.properties : null;
  if (properties) {
    if (typeof properties.$anon_distinct_id === 'string') into.push(properties.$anon_distinct_id);
    if (typeof properties.alias === 'string') into.push(properties.alias);
  }
  return into;
}

/** PostHog's `sanitizeEventName`: non-strings become their JSON text; at most 200 characters. */
function readEventName(value: unknown): string | null {
  if (value === undefined || value === null || value === '') return null;
  const name = typeof value === 'string' ? value : JSON.stringify(value);
  return truncate(withoutNul(name), MAX_ID_LENGTH);
}

/**
 * `$distinct_id`, then `properties.distinct_id`, then `distinct_id` (Django's order); the first
 * usable one wins, so a null left in one place by a client does not hide a good id in another.
 * Numbers and other values become strings (objects their JSON text, as in Rust capture).
 * Exported for the cluster log, which partitions a request's events by the id they are stored under.
 */
export function eventDistinctId(raw: RawEvent): string | null {
  const id = distinctIdText(raw.$distinct_id) ?? (isObject(raw.properties) ? distinctIdText(raw.properties.distinct_id) : null) ?? distinctIdText(raw.distinct_id);
  return id === null ? null : truncate(withoutNul(id), MAX_ID_LENGTH);
}

/** U+0000 replaced by U+FFFD; the regex runs only for a text that has one (almost none has). */
const withoutNul = (text: string): string => (text.indexOf('\u0000') < 0 ? text : text.replace(/\u0000/g, '\uFFFD'));

function distinctIdText(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'number' && !Number.isFinite(value)) return null;
  const text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  // A first character that is printable ASCII other than a space is not white space: no trim needed.
  const first = text.charCodeAt(0);
  return (first > 32 && first < 127) || text.trim() !== '' ? text : null;
}

/** Cut to `max` code points, never through a surrogate pair. */
function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  return Array.from(text).slice(0, max).join('');
}

function readUuid(value: unknown): string | null {
  if (typeof value !== 'string' || !UUID.test(value)) return null;
  const hex = value.replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function buildProperties(raw: RawEvent, event: string, ctx: NormalizeContext): Record<string, unknown> {
  const properties: Record<string, unknown> = isObject(raw.properties) ? { ...raw.properties } : {};
  for (const [field, key] of SAMPLE_FIELD_ENTRIES) {
    if (raw[field] !== undefined && raw[field] !== null && !(key in properties)) properties[key] = raw[field];
  }
  // posthog-js puts $set/$set_once at the event's top level; PostHog merges them into properties.
  for (const key of ['$set', '$set_once'] as const) {
    if (isObject(raw[key])) properties[key] = { ...(isObject(properties[key]) ? properties[key] : {}), ...raw[key] };
  }
  if (!WITHOUT_PERSON_PROPERTIES.has(event)) addPersonPropertiesFromEvent(properties);
  if (ctx.sentAt) properties.$sent_at = ctx.sentAtText ?? ctx.sentAt.toISOString();
  if (ctx.anonymizeIps) delete properties.$ip;
  else if (ctx.ip && !('$ip' in properties)) properties.$ip = ctx.ip;
  return properties;
}

/**
 * plugin-server `personInitialAndUTMProperties`: browser, device and campaign properties of the
 * event also go to the person: current value in `$set`, first value in `$set_once` as
 * `$initial_<key>`, unless the event sets those keys itself. Server SDKs (`$is_server`) describe
 * the server host in `$os`, so that is not copied; `$os_name` stands in for a missing `$os`.
 */
function addPersonPropertiesFromEvent(properties: Record<string, unknown>): void {
  const skipHostOs = properties.$is_server === true;
  let set: Record<string, unknown> | undefined;
  let setOnce: Record<string, unknown> | undefined;
  for (const [key, initialKey] of INITIAL_KEYS) {
    if (!(key in properties) || (skipHostOs && (key === '$os' || key === '$os_version'))) continue;
    set ??= isObject(properties.$set) ? { ...properties.$set } : {};
    setOnce ??= isObject(properties.$set_once) ? { ...properties.$set_once } : {};
    if (!(key in set)) set[key] = properties[key];
    if (!(initialKey in setOnce)) setOnce[initialKey] = properties[key];
  }
  if (!set || !setOnce) return;
  if (properties.$os_name !== undefined) {
    if (!('$os' in properties)) properties.$os = properties.$os_name;
    if (!('$os' in set)) set.$os = properties.$os_name;
    if (!('$initial_os' in setOnce)) setOnce.$initial_os = properties.$os_name;
  }
  properties.$set = set;
  properties.$set_once = setOnce;
}

function readGroups(value: unknown): Record<string, string> {
  if (!isObject(value)) return {};
  const groups: Record<string, string> = {};
  for (const [type, key] of Object.entries(value)) {
    if (key !== null && key !== undefined && key !== '') Object.defineProperty(groups, type, { value: String(key), enumerable: true, writable: true, configurable: true });
  }
  return groups;
}

