/**
 * What an event does to persons and groups, as a list of operations for storage to apply. Follows
 * PostHog's `person-state.ts`:
 *
 * - An unknown distinct_id gets a new person: `{...$set_once, ...$set, $creator_event_uuid}`.
 * - A known one gets `$set_once` (only keys not present), then `$set`, then `$unset`; outside
 *   the person events (`$identify`, `$create_alias`, `$merge_dangerously`, `$set`), new values of
 *   the page and browser keys it has (`QUIET_PERSON_PROPERTIES`) are written only with another change.
 * - `$identify` with `$anon_distinct_id`, and `$create_alias` / `$merge_dangerously` with `alias`,
 *   link the other id to the event's distinct_id and mark the person identified:
 *     neither has a person → one new person with both ids;
 *     one has a person → the other id is added to it;
 *     both, different persons → the other person is merged INTO the event's person: properties
 *     `{...other, ...target}` (the target wins), the earlier created_at, ids moved, other deleted.
 *     Refused (with a warning) when the other person is already identified, except for
 *     `$merge_dangerously`; refused for placeholder ids like `anonymous` or `null`.
 * - `$groupidentify` upserts the group `$group_type`/`$group_key` with `$group_set`.
 * - `$process_person_profile: false` events change no person.
 *
 * Pure: the current state comes through `PersonLookup`, new person ids from `newPersonId`.
 */
import type { NormalizedEvent } from './normalize-event';

export interface PersonRecord {
  personId: string;
  properties: Record<string, unknown>;
  isIdentified: boolean;
  /** Epoch ms. */
  createdAt: number;
}

export interface PersonLookup {
  lookup(distinctId: string): PersonRecord | null;
}

type Properties = Record<string, unknown>;

export type PersonOperation =
  | { type: 'create_person'; personId: string; distinctIds: string[]; properties: Properties; isIdentified: boolean; createdAt: number }
  | { type: 'add_distinct_id'; personId: string; distinctId: string }
  /** `properties` is the person's whole new property set. */
  | { type: 'update_person'; personId: string; properties: Properties; isIdentified: boolean }
  /** Move every distinct id of `fromPersonId` to `intoPersonId`, delete `fromPersonId`, then set the rest on `intoPersonId`. */
  | { type: 'merge_persons'; fromPersonId: string; intoPersonId: string; properties: Properties; isIdentified: true; createdAt: number }
  /** Shallow-merge `properties` into the group's properties, creating the group if needed (not when its type would be a project's sixth: MAX_GROUP_TYPES). */
  | { type: 'upsert_group'; groupType: string; groupKey: string; properties: Properties; createdAt: number };

/** PostHog's group types a project: indexes 0–4 (`posthog_grouptypemapping`); a group of a type past them is not recorded. */
export const MAX_GROUP_TYPES = 5;

/** The lowest group type index none of `taken` is, or null when the project's five are all taken. */
export function freeGroupTypeIndex(taken: Iterable<number>): number | null {
  const held = new Set(taken);
  for (let index = 0; index < MAX_GROUP_TYPES; index++) if (!held.has(index)) return index;
  return null;
}

export interface IngestionWarning {
  type: 'cannot_merge_with_illegal_distinct_id' | 'cannot_merge_already_identified';
  details: Record<string, string>;
}

export interface PersonPlan {
  /** The person the event belongs to once the operations are applied (null when not processed). */
  personId: string | null;
  operations: PersonOperation[];
  warnings: IngestionWarning[];
}

export type PersonEvent = Pick<
  NormalizedEvent,
  'uuid' | 'event' | 'distinctId' | 'properties' | 'timestamp' | 'set' | 'setOnce' | 'unset' | 'anonDistinctId' | 'alias' | 'processPerson'
>;

// person-state.ts `isDistinctIdIllegal`: ids that come from bugs, never merged. Quoted forms too.
const CASE_INSENSITIVE_ILLEGAL = withQuotes(['anonymous', 'guest', 'distinctid', 'distinct_id', 'id', 'not_authenticated', 'email', 'undefined', 'true', 'false']);
const CASE_SENSITIVE_ILLEGAL = withQuotes(['[object Object]', 'NaN', 'None', 'none', 'null', '0', 'undefined']);

function withQuotes(ids: string[]): Set<string> {
  return new Set(ids.flatMap((id) => [id, `'${id}'`, `"${id}"`]));
}

export function isIllegalDistinctId(id: string): boolean {
  return id.trim() === '' || CASE_INSENSITIVE_ILLEGAL.has(id.toLowerCase()) || CASE_SENSITIVE_ILLEGAL.has(id);
}

export function planPersonUpdates(event: PersonEvent, people: PersonLookup, newPersonId: () => string): PersonPlan {
  const plan: PersonPlan = { personId: null, operations: [], warnings: [] };
  const group = planGroupUpsert(event);
  if (group) plan.operations.push(group);
  if (!event.processPerson) {
    plan.personId = people.lookup(event.distinctId)?.personId ?? null;
    return plan;
  }
  const otherId = event.alias ?? event.anonDistinctId;
  if (otherId !== null && otherId !== event.distinctId && canMerge(event, otherId, plan)) {
    planIdentify(event, otherId, people, newPersonId, plan);
  } else {
    planUpdate(event, people, newPersonId, plan);
  }
  return plan;
}

function canMerge(event: PersonEvent, otherId: string, plan: PersonPlan): boolean {
  const illegal = [event.distinctId, otherId].find(isIllegalDistinctId);
  if (illegal === undefined) return true;
  const other = illegal === event.distinctId ? otherId : event.distinctId;
  plan.warnings.push({ type: 'cannot_merge_with_illegal_distinct_id', details: { illegalDistinctId: illegal, otherDistinctId: other, eventUuid: event.uuid } });
  return false;
}

function planUpdate(event: PersonEvent, people: PersonLookup, newPersonId: () => string, plan: PersonPlan): void {
  const person = people.lookup(event.distinctId);
  if (person === null) {
    plan.personId = createPerson(event, [event.distinctId], false, newPersonId, plan);
    return;
  }
  plan.personId = person.personId;
  updatePerson(event, person, person.isIdentified, plan);
}

function planIdentify(event: PersonEvent, otherId: string, people: PersonLookup, newPersonId: () => string, plan: PersonPlan): void {
  const other = people.lookup(otherId);
  const target = people.lookup(event.distinctId);
  if (other === null && target === null) {
    plan.personId = createPerson(event, [event.distinctId, otherId], true, newPersonId, plan);
  } else if (target === null) {
    plan.operations.push({ type: 'add_distinct_id', personId: other!.personId, distinctId: event.distinctId });
    plan.personId = updatePerson(event, other!, true, plan);
  } else if (other === null) {
    plan.operations.push({ type: 'add_distinct_id', personId: target.personId, distinctId: otherId });
    plan.personId = updatePerson(event, target, true, plan);
  } else if (other.personId === target.personId) {
    plan.personId = updatePerson(event, target, true, plan);
  } else if (other.isIdentified && event.event !== '$merge_dangerously') {
    plan.warnings.push({ type: 'cannot_merge_already_identified', details: { sourcePersonDistinctId: otherId, targetPersonDistinctId: event.distinctId, eventUuid: event.uuid } });
    plan.personId = updatePerson(event, target, true, plan);
  } else {
    const { properties } = applyPropertyUpdates({ ...other.properties, ...target.properties }, event);
    const createdAt = Math.min(other.createdAt, target.createdAt);
    plan.operations.push({ type: 'merge_persons', fromPersonId: other.personId, intoPersonId: target.personId, properties, isIdentified: true, createdAt });
    plan.personId = target.personId;
  }
}

function createPerson(event: PersonEvent, distinctIds: string[], isIdentified: boolean, newPersonId: () => string, plan: PersonPlan): string {
  const personId = newPersonId();
  const properties = { ...event.setOnce, ...event.set, $creator_event_uuid: event.uuid };
  plan.operations.push({ type: 'create_person', personId, distinctIds, properties, isIdentified, createdAt: event.timestamp });
  return personId;
}

/** Emits an update only when something changes; returns the person id. */
function updatePerson(event: PersonEvent, person: PersonRecord, isIdentified: boolean, plan: PersonPlan): string {
  const { properties, changed } = applyPropertyUpdates(person.properties, event, PERSON_EVENTS.has(event.event) ? NONE_QUIET : QUIET_PERSON_PROPERTIES);
  const identifiedNow = isIdentified || person.isIdentified;
  if (changed || identifiedNow !== person.isIdentified) {
    plan.operations.push({ type: 'update_person', personId: person.personId, properties, isIdentified: identifiedNow });
  }
  return person.personId;
}

/** The events that name persons: they apply every change they carry, quiet keys included. */
const PERSON_EVENTS: ReadonlySet<string> = new Set(['$identify', '$create_alias', '$merge_dangerously', '$set']);

/**
 * plugin-server `FILTERED_PERSON_UPDATE_PROPERTIES`: properties of the browser, the page and the
 * place that change from one event to the next (the client copies them into `$set` on every
 * event). A new value of one of these on a person that already has the key is no reason to update
 * the person: it is written only with another change, as PostHog does. Without this, every
 * pageview rewrote its person.
 */
export const QUIET_PERSON_PROPERTIES: ReadonlySet<string> = new Set([
  '$current_url', '$pathname', '$referring_domain', '$referrer',
  '$screen_height', '$screen_width', '$viewport_height', '$viewport_width',
  '$browser', '$browser_version', '$device_type', '$raw_user_agent', '$os', '$os_name', '$os_version',
  '$geoip_postal_code', '$geoip_time_zone', '$geoip_latitude', '$geoip_longitude', '$geoip_accuracy_radius',
  '$geoip_subdivision_1_code', '$geoip_subdivision_1_name', '$geoip_subdivision_2_code', '$geoip_subdivision_2_name',
  '$geoip_subdivision_3_code', '$geoip_subdivision_3_name',
  '$geoip_city_confidence', '$geoip_country_confidence', '$geoip_postal_code_confidence', '$geoip_subdivision_1_confidence', '$geoip_subdivision_2_confidence',
]);
const NONE_QUIET: ReadonlySet<string> = new Set();

/**
 * `$set_once` for absent keys, then `$set`, then `$unset`; a value equal by identity is no change.
 * Nothing changes unless something other than a new value of a `quiet` key the person already
 * has does; then every change is applied, quiet ones included. The properties are copied only on
 * the first change: most `$set`s repeat what the person has.
 */
export function applyPropertyUpdates(current: Properties, updates: Pick<PersonEvent, 'set' | 'setOnce' | 'unset'>, quiet: ReadonlySet<string> = NONE_QUIET): { properties: Properties; changed: boolean } {
  if (quiet.size > 0 && !changesAnythingLoud(current, updates, quiet)) return { properties: current, changed: false };
  let properties: Properties | null = null;
  for (const key in updates.setOnce) {
    if (!Object.hasOwn(updates.setOnce, key) || Object.hasOwn(properties ?? current, key)) continue;
    properties ??= { ...current };
    setOwn(properties, key, updates.setOnce[key]);
  }
  for (const key in updates.set) {
    if (!Object.hasOwn(updates.set, key)) continue;
    const value = updates.set[key];
    const now = properties ?? current;
    if (Object.hasOwn(now, key) && now[key] === value) continue;
    properties ??= { ...current };
    setOwn(properties, key, value);
  }
  for (const key of updates.unset) {
    if (!Object.hasOwn(properties ?? current, key)) continue;
    properties ??= { ...current };
    delete properties[key];
  }
  return properties ? { properties, changed: true } : { properties: current, changed: false };
}

/** Whether `updates` change `current` beyond new values of `quiet` keys it already has. */
function changesAnythingLoud(current: Properties, updates: Pick<PersonEvent, 'set' | 'setOnce' | 'unset'>, quiet: ReadonlySet<string>): boolean {
  for (const key in updates.setOnce) if (Object.hasOwn(updates.setOnce, key) && !Object.hasOwn(current, key)) return true;
  for (const key in updates.set) {
    if (!Object.hasOwn(updates.set, key)) continue;
    if (!Object.hasOwn(current, key)) return true;
    if (current[key] !== updates.set[key] && !quiet.has(key)) return true;
  }
  for (const key of updates.unset) if (Object.hasOwn(current, key)) return true;
  return false;
}

/** Property keys come from clients: `__proto__` must stay a key, never become a prototype. */
export function setOwn<T>(target: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

function planGroupUpsert(event: PersonEvent): PersonOperation | null {
  if (event.event !== '$groupidentify') return null;
  const { $group_type: groupType, $group_key: groupKey, $group_set: groupSet } = event.properties;
  if (typeof groupType !== 'string' || groupType === '' || groupKey === undefined || groupKey === null || groupKey === '') return null;
  const properties = typeof groupSet === 'object' && groupSet !== null && !Array.isArray(groupSet) ? (groupSet as Properties) : {};
  return { type: 'upsert_group', groupType, groupKey: String(groupKey), properties, createdAt: event.timestamp };
}
