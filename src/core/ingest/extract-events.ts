/**
 * Decoded JSON → the events it carries and the key that authorises them.
 *
 * Shapes (PostHog accepts all of them on every capture path): one event object; a bare array of
 * events (posthog-js); `{api_key, batch: [...], sent_at}` (posthog-node, -python, -js 1.4xx);
 * `{data: <one of those>}`. On /engage an object without `event` is an `$identify`.
 *
 * The key, first found: query `token`/`api_key`, form `api_key`/`token` (both in `hints`), then
 * the top level (`$token`, `token`, `api_key`, `properties.token`), then each event in order with
 * the same keys. Only non-empty strings count: anything else is as good as no key. When events
 * carry different tokens the first wins; PostHog's Rust capture refuses such a batch, but tokens
 * are public and each request is stored under one project, so nothing leaks either way.
 */
import { AppError } from '../../errors';
import type { PayloadHints } from './decode-payload';
import { parseTimestamp } from './event-time';

export type RawEvent = Record<string, unknown>;

export interface ExtractedEvents {
  token: string | null;
  /** `phx_…`: a personal API key, which needs `projectId` to name the project. */
  isPersonalKey: boolean;
  projectId: string | null;
  /** Request send time (epoch ms): body `sent_at`, else query `_` / form `sent_at`. */
  sentAt: number | null;
  historicalMigration: boolean;
  events: RawEvent[];
}

export interface ExtractOptions {
  hints?: PayloadHints;
  /** The request came to /engage: events without a name are `$identify` (old posthog-js). */
  engage?: boolean;
  /**
   * A body read back from the log, answered 200 already: entries that are not objects (logged
   * by a version that skipped them rather than refusing the request) are skipped, not refused.
   */
  logged?: boolean;
}

const NO_DATA =
  'No data found. Make sure to use a POST request when sending the payload in the body of the request.';
const TOKEN_KEYS = ['$token', 'token', 'api_key'] as const;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function extractEvents(payload: unknown, options: ExtractOptions = {}): ExtractedEvents {
  const { envelope, entries } = unwrap(payload);
  if (!options.logged) checkEntries(entries);
  const events = (options.logged ? entries.filter(isObject) : (entries as RawEvent[])).map((e) => (options.engage && e.event === undefined ? { ...e, event: '$identify' } : e));
  const sources = envelope ? [envelope, ...events] : events;
  const token = options.hints?.token ?? firstValue(sources, tokenOf);
  return {
    token,
    isPersonalKey: token?.startsWith('phx_') ?? false,
    projectId: options.hints?.projectId ?? firstValue(sources, projectIdOf),
    sentAt: parseTimestamp(envelope?.sent_at) ?? parseTimestamp(options.hints?.sentAt ?? null),
    historicalMigration: envelope?.historical_migration === true,
    events,
  };
}

/**
 * A malformed entry refuses the whole request, as PostHog's capture does: what is answered 200
 * is stored whole (less the well-formed events the spec drops: no name, no distinct id), and a
 * client is told at once that it sends something wrong. Malformed: an entry that is not an
 * object (null, a string, a number, a list), or `properties` that are neither an object nor null.
 */
function checkEntries(entries: readonly unknown[]): void {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    if (!isObject(entry)) throw new AppError('invalid_payload', `Invalid payload: event ${i} is not an object (got ${describe(entry)}).`, entries.length > 1 ? 'batch' : null);
    const properties = entry.properties;
    if (properties !== undefined && properties !== null && !isObject(properties)) {
      throw new AppError('invalid_payload', `Invalid payload: the properties of event ${i} must be an object (got ${describe(properties)}).`, 'properties');
    }
  }
}

const describe = (value: unknown): string => (value === null ? 'null' : Array.isArray(value) ? 'a list' : `a ${typeof value}`);

/** The batch-level object (if any) and the list of event candidates. */
function unwrap(payload: unknown): { envelope: Record<string, unknown> | null; entries: unknown[] } {
  if (Array.isArray(payload)) {
    if (payload.length === 0) throw new AppError('invalid_payload', NO_DATA);
    return { envelope: null, entries: payload };
  }
  if (!isObject(payload)) {
    throw new AppError('invalid_payload', 'Invalid payload: expected an event, a list of events or {"batch": [...]}.');
  }
  if (Object.keys(payload).length === 0) throw new AppError('invalid_payload', NO_DATA);
  if ('batch' in payload) {
    if (!Array.isArray(payload.batch)) throw new AppError('invalid_payload', 'Invalid payload: "batch" must be a list of events.', 'batch');
    return { envelope: payload, entries: payload.batch };
  }
  if (!('event' in payload) && (isObject(payload.data) || Array.isArray(payload.data))) {
    const inner = unwrap(payload.data);
    return { envelope: { ...payload, ...inner.envelope }, entries: inner.entries };
  }
  // A single event is its own envelope: its api_key and sent_at are the request's.
  return { envelope: payload, entries: [payload] };
}

function firstValue(sources: Record<string, unknown>[], read: (source: Record<string, unknown>) => string | null): string | null {
  for (const source of sources) {
    const value = read(source);
    if (value !== null) return value;
  }
  return null;
}

function tokenOf(source: Record<string, unknown>): string | null {
  for (const key of TOKEN_KEYS) if (typeof source[key] === 'string' && source[key] !== '') return source[key] as string;
  const properties = source.properties;
  if (isObject(properties) && typeof properties.token === 'string' && properties.token !== '') return properties.token;
  return null;
}

function projectIdOf(source: Record<string, unknown>): string | null {
  const value = source.project_id;
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}
