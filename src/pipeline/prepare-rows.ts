import { hotValuesOf } from '../core/events/columns';
import { seededUuids, uuidv7 } from '../ids';
import type { RawEvent } from '../core/ingest/extract-events';
import { eventOverLimits, type LimitDrop } from '../core/ingest/limits';
import { normalizeEvent, type DropReason } from '../core/ingest/normalize-event';
import { propertyTypeOf, type PropertyType } from '../core/ingest/property-type';
import { encodeRowLines, type UnplacedRow } from '../storage/events/log/row-lines';
import type { IntakeContext } from '../storage/events';
import type { SeenSummary } from '../storage/seen/seen-tracker';
import { toPersonInput, type PersonInput } from './person-input';

/**
 * A capture request's events normalized and encoded as stored rows, all but their project and
 * person: everything that needs no state, so it can run in any thread, as soon as the body is
 * parsed. `applyRows` (main thread, log order) then runs the persons, notes the definitions and
 * writes each row's project and person ids in place.
 */
export interface PreparedRows {
  lines: Uint8Array;
  /** Byte offsets of each row's team and person slots in `lines`. */
  teams: Int32Array;
  persons: Int32Array;
  rows: number;
  uuids: string[];
  /** Event-time span of the rows (epoch ms), null when there are none. */
  span: [number, number] | null;
  /** One `PersonInput` per row, in row order; as JSON text to cross threads (one string and a parse on arrival cost less than cloning the objects). */
  people: PersonInput[] | string;
  seen: SeenSummary;
  /** Events not made into rows, by reason: not an event (no name, no distinct id…) or over the per-event limits (EVENT_LIMITS). */
  dropped: Partial<Record<DropReason | LimitDrop, number>>;
  /** Whether `$ip` was left out (the project anonymizes addresses). */
  anonymizeIps: boolean;
  /** The top-level property keys of the rows by UTC day of their timestamp (`EncodedRows.propertyKeys`). */
  propertyKeys: Array<[day: number, keys: readonly string[]]>;
}

/** What preparing reads of a request: all of its context but the project (the key is checked later). */
export type PrepareContext = Pick<IntakeContext, 'receivedAt' | 'ip' | 'anonymizeIps' | 'sentAt'>;

/**
 * Normalize a request's events (dropping those without a name or distinct id, as the spec
 * says, and counting those over the per-event limits) and encode them. Everything it reads was fixed at receipt (the context), so a replay of
 * the log prepares what the first run did; `newUuid` stands in for a missing client uuid.
 */
export function prepareRows(ctx: PrepareContext, events: readonly unknown[], newUuid: () => string): PreparedRows {
  return prepareRequests([{ ctx, events, newUuid }]);
}

/** One request for `prepareRequests`: its context, its events, and the ids of those without a client uuid. */
export interface RequestEvents {
  ctx: PrepareContext;
  events: readonly unknown[];
  newUuid: () => string;
}

/**
 * Several requests' rows as one (`prepareRows` of each, in order, joined): what processing does
 * with a run of small requests of one project in another thread, so the thread that owns persons
 * receives one message for the run, not one per request.
 */
export function prepareRequests(requests: readonly RequestEvents[]): PreparedRows {
  const rows: UnplacedRow[] = [];
  const people: PersonInput[] = [];
  const uuids: string[] = [];
  const lastSeen = new Map<string, number>();
  const properties = new TypedKeys();
  const personProperties = new TypedKeys();
  const keysByEvent = new Map<string, EventKeys>();
  const dropped: PreparedRows['dropped'] = {};
  let lo = Infinity;
  let hi = -Infinity;
  // The rows' keys by day: the request's own list while every row falls on one day (the usual
  // case), one set per day from the first row of another day on.
  let firstDay = NaN;
  let byDay: Map<number, Set<string>> | null = null;
  for (const { ctx, events, newUuid } of requests) {
    const sentAt = ctx.sentAt === null ? null : new Date(ctx.sentAt);
    const context = { now: new Date(ctx.receivedAt), sentAt, sentAtText: sentAt?.toISOString(), ip: ctx.ip, anonymizeIps: ctx.anonymizeIps, newUuid };
    for (const raw of events) {
      const result = normalizeEvent(raw as RawEvent, context);
      if (!('ok' in result)) {
        dropped[result.drop] = (dropped[result.drop] ?? 0) + 1;
        continue;
      }
      const e = result.ok;
      const json = JSON.stringify(e.properties);
      const over = eventOverLimits(json, e.properties, e);
      if (over !== null) {
        dropped[over] = (dropped[over] ?? 0) + 1;
        continue;
      }
      rows.push({
        uuid: e.uuid,
        event: e.event,
        distinctId: e.distinctId,
        properties: json,
        timestamp: e.timestamp,
        createdAt: ctx.receivedAt,
        elementsChain: e.elementsChain,
        hot: hotValuesOf(e.properties),
      });
      people.push(toPersonInput(e));
      uuids.push(e.uuid);
      if (e.timestamp < lo) lo = e.timestamp;
      if (e.timestamp > hi) hi = e.timestamp;
      const seenAt = lastSeen.get(e.event);
      if (seenAt === undefined || e.timestamp > seenAt) lastSeen.set(e.event, e.timestamp);
      let keys = keysByEvent.get(e.event);
      if (keys === undefined) keysByEvent.set(e.event, (keys = new EventKeys()));
      const day = Math.floor(e.timestamp / DAY_MS);
      if (rows.length === 1) firstDay = day;
      else if (byDay === null && day !== firstDay) byDay = new Map([[firstDay, new Set(properties.names)]]);
      if (byDay !== null) {
        let set = byDay.get(day);
        if (set === undefined) byDay.set(day, (set = new Set()));
        for (const name in e.properties) set.add(name);
      }
      properties.note(e.properties);
      keys.note(e.properties);
      personProperties.note(e.set);
      personProperties.note(e.setOnce);
    }
  }
  const { lines, teams, persons } = encodeRowLines(rows, true);
  return {
    lines,
    teams,
    persons,
    rows: rows.length,
    uuids,
    span: rows.length ? [lo, hi] : null,
    people,
    seen: {
      events: [...lastSeen],
      // Plain objects: they cross threads, and the indexes need not.
      properties: { names: properties.names, types: properties.types },
      personProperties: { names: personProperties.names, types: personProperties.types },
      eventProperties: Array.from(keysByEvent, ([event, keys]) => [event, keys.keys] as const),
    },
    dropped,
    anonymizeIps: requests[0]?.ctx.anonymizeIps ?? false,
    propertyKeys: byDay ? Array.from(byDay, ([day, set]) => [day, [...set]]) : rows.length ? [[firstDay, properties.names]] : [],
  };
}

const DAY_MS = 86_400_000;

/**
 * Each key once, in the order first seen. Most requests carry one event, whose keys are unique
 * already: the set that finds repeats is made only when an object comes after one with keys.
 */
class EventKeys {
  readonly keys: string[] = [];
  private index: Set<string> | null = null;

  note(props: Record<string, unknown>): void {
    if (this.keys.length === 0) {
      for (const name in props) this.keys.push(name);
      return;
    }
    const index = (this.index ??= new Set(this.keys));
    for (const name in props) {
      if (index.has(name)) continue;
      index.add(name);
      this.keys.push(name);
    }
  }
}

/** Keys with the type their values showed: the first value of a key that shows one decides it (as the definitions tracker does). */
class TypedKeys {
  readonly names: string[] = [];
  readonly types: Array<PropertyType | null> = [];
  private index: Map<string, number> | null = null;

  note(props: Record<string, unknown>): void {
    if (this.names.length === 0) {
      // An object's keys are unique: the first one's need no search (nor an index, if no more come).
      for (const name in props) this.add(name, props[name]);
      return;
    }
    // A few names (a single event's `$set` before its `$set_once`) are searched in place: building
    // the index would cost more than the search. Never many, however many keys this object adds.
    if (this.names.length > SEARCHED_IN_PLACE) this.index ??= this.indexed();
    for (const name in props) {
      const at = this.index ? (this.index.get(name) ?? -1) : this.names.indexOf(name);
      if (at >= 0) {
        if (this.types[at] === null) this.types[at] = propertyTypeOf(props[name]);
        continue;
      }
      this.add(name, props[name]);
      if (this.index) this.index.set(name, this.names.length - 1);
      else if (this.names.length > SEARCHED_AT_MOST) this.index = this.indexed();
    }
  }

  private add(name: string, value: unknown): void {
    this.names.push(name);
    this.types.push(propertyTypeOf(value));
  }

  private indexed(): Map<string, number> {
    return new Map(this.names.map((name, i) => [name, i]));
  }
}

/** Names searched in place when an object's keys are noted (below: an index), and at most while it adds more. */
const SEARCHED_IN_PLACE = 16;
const SEARCHED_AT_MOST = 64;

/** The ids of a request's events without a client uuid: seeded when the request logged a seed (the same ids if processed again). */
export const newUuidsOf = (ctx: Pick<IntakeContext, 'receivedAt' | 'uuidSeed'>): (() => string) =>
  ctx.uuidSeed ? seededUuids(ctx.receivedAt, ctx.uuidSeed) : () => uuidv7(ctx.receivedAt);
