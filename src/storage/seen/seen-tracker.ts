import { uuidv4 } from '../../ids';
import type { Database } from '../db';
import type { ManagementStore } from '../management/types';

/**
 * What ingestion has seen, kept current without a write per event: event names (event
 * definitions with `last_seen_at`), property keys (property definitions, numeric or not), and
 * the project's `ingested_event`. Events only touch memory; `flush` writes what changed.
 */
export interface SeenTracker {
  record(teamId: number, event: string, timestamp: number, properties: Record<string, unknown>, personSet: Record<string, unknown> | null): void;
  flush(): Promise<void>;
  pendingChanges(): number;
  forgetTeam(teamId: number): void;
}

interface PendingEvent {
  teamId: number;
  name: string;
  lastSeen: number;
}

export function createSeenTracker(db: Database, management: ManagementStore): SeenTracker {
  const knownEvents = new Map<string, number>(); // team\0name → last seen written (ms)
  // Property names seen (written or pending) per project and kind: the per-event check is a Set
  // lookup per property, with no string building on the ingest path.
  const seenNames = new Map<string, Set<string>>(); // `${team}\0${kind}` → names
  const namesOf = (teamId: number, kind: string) => {
    const k = `${teamId}\u0000${kind}`;
    let set = seenNames.get(k);
    if (!set) seenNames.set(k, (set = new Set()));
    return set;
  };
  const ingestedTeams = new Set<number>();
  let events = new Map<string, PendingEvent>();
  let properties = new Map<string, { teamId: number; kind: string; name: string; numeric: boolean }>();
  let teamsToMark = new Set<number>();
  let loaded = false;
  let flushing: Promise<void> | null = null;

  // last_seen_at is refreshed at most once a minute per event name: enough for "last seen".
  const LAST_SEEN_RESOLUTION_MS = 60_000;

  const noteProperties = (teamId: number, kind: string, props: Record<string, unknown>) => {
    let names: Set<string> | undefined;
    for (const name in props) {
      names ??= namesOf(teamId, kind);
      if (names.has(name)) continue;
      names.add(name);
      properties.set(`${teamId}\u0000${kind}\u0000${name}`, { teamId, kind, name, numeric: typeof props[name] === 'number' });
    }
  };

  async function loadKnown() {
    if (loaded) return;
    for (const r of await db.query<{ team_id: number; name: string; last_seen_at: Date | null }>(
      'SELECT team_id, name, last_seen_at FROM event_definitions',
    )) {
      knownEvents.set(`${r.team_id}\u0000${r.name}`, r.last_seen_at?.getTime() ?? 0);
    }
    for (const r of await db.query<{ team_id: number; kind: string; name: string }>('SELECT team_id, kind, name FROM property_definitions')) {
      namesOf(r.team_id, r.kind).add(r.name);
    }
    loaded = true;
  }

  async function write(ev: Map<string, PendingEvent>, props: typeof properties, teams: Set<number>) {
    await loadKnown();
    await db.transaction(async (tx) => {
      for (const e of ev.values()) {
        await tx.run(
          `INSERT INTO event_definitions (id, team_id, name, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (team_id, name) DO UPDATE SET last_seen_at = greatest(event_definitions.last_seen_at, excluded.last_seen_at)`,
          [uuidv4(), e.teamId, e.name, new Date(), new Date(e.lastSeen)],
        );
      }
      for (const p of props.values()) {
        await tx.run(
          `INSERT INTO property_definitions (team_id, name, kind, is_numerical, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
          [p.teamId, p.name, p.kind, p.numeric, new Date()],
        );
      }
    });
    for (const [k, e] of ev) knownEvents.set(k, e.lastSeen);
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

  const tracker: SeenTracker = {
    record(teamId, event, timestamp, props, personSet) {
      if (!ingestedTeams.has(teamId) && !teamsToMark.has(teamId)) {
        teamsToMark.add(teamId);
        flushSoon(tracker);
      }
      const key = `${teamId}\u0000${event}`;
      const written = knownEvents.get(key);
      const pending = events.get(key);
      if (pending) pending.lastSeen = Math.max(pending.lastSeen, timestamp);
      else if (written === undefined || timestamp - written >= LAST_SEEN_RESOLUTION_MS) {
        events.set(key, { teamId, name: event, lastSeen: timestamp });
        if (written === undefined) flushSoon(tracker);
      }
      noteProperties(teamId, 'event', props);
      if (personSet) noteProperties(teamId, 'person', personSet);
    },
    pendingChanges: () => events.size + properties.size + teamsToMark.size,
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
          for (const [k, v] of ev) if (!events.has(k)) events.set(k, v);
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
      for (const k of [...knownEvents.keys()]) if (k.startsWith(`${teamId}\u0000`)) knownEvents.delete(k);
      for (const k of [...seenNames.keys()]) if (k.startsWith(`${teamId}\u0000`)) seenNames.delete(k);
    },
  };
  return tracker;
}
