import { EVENT_LIMITS } from '../../core/ingest/limits';
import type { PropertyType } from '../../core/ingest/property-type';
import type { ManagementStore } from '../management/types';
import type { SeenRows } from './seen-rows';

/**
 * What ingestion has seen, kept current without a write per event: event names (event
 * definitions with `last_seen_at`), property keys (property definitions with their type, and
 * which event names carried them), and the project's `ingested_event`. Events only touch
 * memory; `flush` writes what changed.
 */
export interface SeenTracker {
  /** What a request's events show, summed up where they were normalized (`prepareRows`). */
  recordSummary(teamId: number, summary: SeenSummary): void;
  flush(): Promise<void>;
  pendingChanges(): number;
  forgetTeam(teamId: number): void;
}

/**
 * Event names with their latest time; property keys with the type their values showed (null:
 * none yet, e.g. only nulls or objects); and for each event name, the keys its events carried.
 */
export interface SeenSummary {
  events: ReadonlyArray<readonly [name: string, lastSeen: number]>;
  properties: KeysSeen;
  personProperties: KeysSeen;
  eventProperties: ReadonlyArray<readonly [event: string, keys: readonly string[]]>;
}

/** Property keys, each once, and the type each key's values showed (`types[i]` is `names[i]`'s). */
export interface KeysSeen {
  readonly names: readonly string[];
  readonly types: ReadonlyArray<PropertyType | null>;
}

export const NO_KEYS: KeysSeen = { names: [], types: [] };

interface PendingEvent {
  teamId: number;
  name: string;
  lastSeen: number;
}

export function createSeenTracker(rows: SeenRows, management: ManagementStore): SeenTracker {
  // Keyed by team, then by name: the per-event checks are Map/Set lookups with no key built
  // from strings on the ingest path (building and hashing `team\0name` keys showed in its profile).
  const knownEvents = new Map<number, Map<string, number>>(); // team → name → last seen written (ms)
  // Property names seen (written or pending) per project and kind, and whether their type is known.
  const seenNames = new Map<number, Map<string, Map<string, boolean>>>(); // team → kind → name → typed
  // Event name–property key pairs seen (written or pending) per project, and how many.
  const seenPairs = new Map<number, { count: number; byEvent: Map<string, Set<string>> }>();
  const inTeam = <V>(outer: Map<number, V>, teamId: number, make: () => V): V => {
    let v = outer.get(teamId);
    if (v === undefined) outer.set(teamId, (v = make()));
    return v;
  };
  const namesOf = (teamId: number, kind: string) => {
    const kinds = inTeam(seenNames, teamId, () => new Map<string, Map<string, boolean>>());
    let names = kinds.get(kind);
    if (!names) kinds.set(kind, (names = new Map()));
    return names;
  };
  const pairsOf = (teamId: number, event: string) => {
    const team = inTeam(seenPairs, teamId, () => ({ count: 0, byEvent: new Map<string, Set<string>>() }));
    let keys = team.byEvent.get(event);
    if (!keys) team.byEvent.set(event, (keys = new Set()));
    return { team, keys };
  };
  const ingestedTeams = new Set<number>();
  let events = new Map<number, Map<string, PendingEvent>>(); // team → name → pending
  const pendingEvents = () => {
    let n = 0;
    for (const m of events.values()) n += m.size;
    return n;
  };
  let properties = new Map<string, { teamId: number; kind: string; name: string; type: PropertyType | null }>();
  let pairs: Array<{ teamId: number; event: string; property: string }> = [];
  let teamsToMark = new Set<number>();
  let loaded = false;
  let flushing: Promise<void> | null = null;

  // last_seen_at is refreshed at most once a minute per event name: enough for "last seen".
  const LAST_SEEN_RESOLUTION_MS = 60_000;

  async function loadKnown() {
    if (loaded) return;
    const known = await rows.loadKnown();
    for (const r of known.events) inTeam(knownEvents, r.teamId, () => new Map()).set(r.name, r.lastSeen);
    for (const r of known.properties) namesOf(r.teamId, r.kind).set(r.name, r.typed);
    for (const r of known.pairs) {
      const { team, keys } = pairsOf(r.teamId, r.event);
      keys.add(r.property);
      team.count++;
    }
    loaded = true;
  }

  async function write(ev: typeof events, props: typeof properties, evProps: typeof pairs, teams: Set<number>) {
    await loadKnown();
    await rows.write({ events: [...ev.values()].flatMap((m) => [...m.values()]), properties: [...props.values()], pairs: evProps }, new Date());
    for (const [teamId, m] of ev) for (const [name, e] of m) inTeam(knownEvents, teamId, () => new Map()).set(name, e.lastSeen);
    for (const teamId of teams) {
      await management.markIngested(teamId);
      ingestedTeams.add(teamId);
    }
  }

  // Something never seen before (a project's first event, a new event name) is written at once,
  // so the API shows it; repeats only refresh last_seen_at in the periodic flush.
  let soon: ReturnType<typeof setTimeout> | null = null;
  const flushSoon = (tracker: SeenTracker) => {
    if (soon) return;
    soon = setTimeout(() => {
      soon = null;
      tracker.flush().catch(() => undefined);
    }, 0);
  };

  // Bounded per project and kind, and long keys left out: a client sending fresh keys (ids as
  // keys, a 1 MB key) must not grow the definitions, their flush and every listing without end.
  // The events keep their properties: only the listing stops growing.
  const noteNames = (teamId: number, kind: string, seen: KeysSeen) => {
    if (seen.names.length === 0) return;
    const names = namesOf(teamId, kind);
    for (let i = 0; i < seen.names.length; i++) {
      const name = seen.names[i];
      const type = seen.types[i];
      const typed = names.get(name);
      // A known name is noted again only to give it its first type.
      if (typed === true || (typed === false && type === null) || name.length > EVENT_LIMITS.propertyNameLength) continue;
      if (typed === undefined && names.size >= EVENT_LIMITS.propertyDefinitionsPerProject) continue;
      names.set(name, type !== null);
      properties.set(`${teamId}\u0000${kind}\u0000${name}`, { teamId, kind, name, type });
    }
  };
  const notePairs = (teamId: number, seen: SeenSummary['eventProperties']) => {
    for (const [event, keys] of seen) {
      const { team, keys: known } = pairsOf(teamId, event);
      for (const property of keys) {
        if (known.has(property) || property.length > EVENT_LIMITS.propertyNameLength) continue;
        if (team.count >= EVENT_LIMITS.eventPropertiesPerProject) return;
        known.add(property);
        team.count++;
        pairs.push({ teamId, event, property });
      }
    }
  };
  const noteTeam = (teamId: number) => {
    if (!ingestedTeams.has(teamId) && !teamsToMark.has(teamId)) {
      teamsToMark.add(teamId);
      flushSoon(tracker);
    }
  };
  const noteEvent = (teamId: number, event: string, timestamp: number) => {
    const written = knownEvents.get(teamId)?.get(event);
    const pending = events.get(teamId)?.get(event);
    if (pending) pending.lastSeen = Math.max(pending.lastSeen, timestamp);
    else if (written === undefined || timestamp - written >= LAST_SEEN_RESOLUTION_MS) {
      inTeam(events, teamId, () => new Map()).set(event, { teamId, name: event, lastSeen: timestamp });
      if (written === undefined) flushSoon(tracker);
    }
  };

  const tracker: SeenTracker = {
    recordSummary(teamId, summary) {
      noteTeam(teamId);
      for (const [name, lastSeen] of summary.events) noteEvent(teamId, name, lastSeen);
      noteNames(teamId, 'event', summary.properties);
      noteNames(teamId, 'person', summary.personProperties);
      notePairs(teamId, summary.eventProperties);
    },
    pendingChanges: () => pendingEvents() + properties.size + pairs.length + teamsToMark.size,
    flush() {
      // What is pending now is written by this flush, not only what the one under way took; and
      // when another caller's flush takes it first, this one waits for that flush too.
      if (flushing) return flushing.catch(() => undefined).then(() => tracker.flush());
      if (!events.size && !properties.size && !pairs.length && !teamsToMark.size && loaded) return Promise.resolve();
      const ev = events;
      const props = properties;
      const evProps = pairs;
      const teams = teamsToMark;
      events = new Map();
      properties = new Map();
      pairs = [];
      teamsToMark = new Set();
      flushing = write(ev, props, evProps, teams)
        .catch((error) => {
          for (const [teamId, m] of ev) {
            const now = inTeam(events, teamId, () => new Map());
            for (const [name, v] of m) if (!now.has(name)) now.set(name, v);
          }
          for (const [k, v] of props) if (!properties.has(k)) properties.set(k, v);  // names stay marked seen: retried here
          pairs.push(...evProps);
          for (const t of teams) teamsToMark.add(t);
          throw error;
        })
        .finally(() => {
          flushing = null;
        });
      return flushing;
    },
    forgetTeam(teamId) {
      ingestedTeams.delete(teamId);
      knownEvents.delete(teamId);
      seenNames.delete(teamId);
      seenPairs.delete(teamId);
    },
  };
  return tracker;
}
