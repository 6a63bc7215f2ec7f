import { EVENT_LIMITS } from '../../core/ingest/limits';
import { uuidv4 } from '../../ids';
import type { Database } from '../db';
import type { ManagementStore } from '../management/types';

/**
 * What ingestion has seen, kept current without a write per event: event names (event
 * definitions with `last_seen_at`), property keys (property definitions, numeric or not), and
 * the project's `ingested_event`. Events only touch memory; `flush` writes what changed.
 */
export interface SeenTracker {
  /** What a request's events show, summed up where they were normalized (`prepareRows`). */
  recordSummary(teamId: number, summary: SeenSummary): void;
  flush(): Promise<void>;
  pendingChanges(): number;
  forgetTeam(teamId: number): void;
}

/** Event names with their latest time, and property keys with whether their first value was a number. */
export interface SeenSummary {
  events: ReadonlyArray<readonly [name: string, lastSeen: number]>;
  properties: ReadonlyArray<readonly [name: string, numeric: boolean]>;
  personProperties: ReadonlyArray<readonly [name: string, numeric: boolean]>;
}

interface PendingEvent {
  teamId: number;
  name: string;
  lastSeen: number;
}

export function createSeenTracker(db: Database, management: ManagementStore): SeenTracker {
  // Keyed by team, then by name: the per-event checks are Map/Set lookups with no key built
  // from strings on the ingest path (building and hashing `team\0name` keys cost ~4% of it).
  const knownEvents = new Map<number, Map<string, number>>(); // team → name → last seen written (ms)
  // Property names seen (written or pending) per project and kind.
  const seenNames = new Map<number, Map<string, Set<string>>>(); // team → kind → names
  const inTeam = <V>(outer: Map<number, V>, teamId: number, make: () => V): V => {
    let v = outer.get(teamId);
    if (v === undefined) outer.set(teamId, (v = make()));
    return v;
  };
  const namesOf = (teamId: number, kind: string) => {
    const kinds = inTeam(seenNames, teamId, () => new Map<string, Set<string>>());
    let set = kinds.get(kind);
    if (!set) kinds.set(kind, (set = new Set()));
    return set;
  };
  const ingestedTeams = new Set<number>();
  let events = new Map<number, Map<string, PendingEvent>>(); // team → name → pending
  const pendingEvents = () => {
    let n = 0;
    for (const m of events.values()) n += m.size;
    return n;
  };
  let properties = new Map<string, { teamId: number; kind: string; name: string; numeric: boolean }>();
  let teamsToMark = new Set<number>();
  let loaded = false;
  let flushing: Promise<void> | null = null;

  // last_seen_at is refreshed at most once a minute per event name: enough for "last seen".
  const LAST_SEEN_RESOLUTION_MS = 60_000;

  async function loadKnown() {
    if (loaded) return;
    for (const r of await db.query<{ team_id: number; name: string; last_seen_at: Date | null }>(
      'SELECT team_id, name, last_seen_at FROM event_definitions',
    )) {
      inTeam(knownEvents, r.team_id, () => new Map()).set(r.name, r.last_seen_at?.getTime() ?? 0);
    }
    for (const r of await db.query<{ team_id: number; kind: string; name: string }>('SELECT team_id, kind, name FROM property_definitions')) {
      namesOf(r.team_id, r.kind).add(r.name);
    }
    loaded = true;
  }

  async function write(ev: typeof events, props: typeof properties, teams: Set<number>) {
    await loadKnown();
    const now = new Date();
    // Many rows a statement: one statement a row kept the write connection (every load behind
    // it) busy for seconds when a request brought thousands of new property keys.
    await db.transaction(async (tx) => {
      for (const chunk of chunks([...ev.values()].flatMap((m) => [...m.values()]))) {
        await tx.run(
          `INSERT INTO event_definitions (id, team_id, name, created_at, last_seen_at) VALUES ${placeholders(chunk.length, 5)}
           ON CONFLICT (team_id, name) DO UPDATE SET last_seen_at = greatest(event_definitions.last_seen_at, excluded.last_seen_at)`,
          chunk.flatMap((e) => [uuidv4(), e.teamId, e.name, now, new Date(e.lastSeen)]),
        );
      }
      for (const chunk of chunks([...props.values()])) {
        await tx.run(
          `INSERT INTO property_definitions (team_id, name, kind, is_numerical, created_at) VALUES ${placeholders(chunk.length, 5)} ON CONFLICT DO NOTHING`,
          chunk.flatMap((p) => [p.teamId, p.name, p.kind, p.numeric, now]),
        );
      }
    });
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
  const noteNames = (teamId: number, kind: string, pairs: SeenSummary['properties']) => {
    if (pairs.length === 0) return;
    const names = namesOf(teamId, kind);
    for (const [name, numeric] of pairs) {
      if (names.has(name) || name.length > EVENT_LIMITS.propertyNameLength) continue;
      if (names.size >= EVENT_LIMITS.propertyDefinitionsPerProject) break;
      names.add(name);
      properties.set(`${teamId}\u0000${kind}\u0000${name}`, { teamId, kind, name, numeric });
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
    },
    pendingChanges: () => pendingEvents() + properties.size + teamsToMark.size,
    flush() {
      if (flushing) return flushing;
      if (!events.size && !properties.size && !teamsToMark.size && loaded) return Promise.resolve();
      const ev = events;
      const props = properties;
      const teams = teamsToMark;
      events = new Map();
      properties = new Map();
      teamsToMark = new Set();
      flushing = write(ev, props, teams)
        .catch((error) => {
          for (const [teamId, m] of ev) {
            const now = inTeam(events, teamId, () => new Map());
            for (const [name, v] of m) if (!now.has(name)) now.set(name, v);
          }
          for (const [k, v] of props) if (!properties.has(k)) properties.set(k, v);  // names stay marked seen: retried here
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
    },
  };
  return tracker;
}

const ROWS_PER_STATEMENT = 500;

function* chunks<T>(items: readonly T[]): Generator<T[]> {
  for (let i = 0; i < items.length; i += ROWS_PER_STATEMENT) yield items.slice(i, i + ROWS_PER_STATEMENT);
}

/** `(?, ?, …), (?, ?, …)`: `rows` groups of `width` parameters. */
const placeholders = (rows: number, width: number): string => Array(rows).fill(`(${Array(width).fill('?').join(', ')})`).join(', ');
