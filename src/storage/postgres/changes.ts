import { uuidv4 } from '../../ids';
import type { Pg, PgTx } from './client';

/**
 * What one server process tells the others sharing its database, so their caches drop what
 * changed (LISTEN/NOTIFY; ~10 ms here). A change is sent inside the transaction that made it:
 * PostgreSQL delivers it on commit, and never for a rollback.
 * - `management`: an organization, user, key or project changed (the project and key caches).
 * - `flags` / `hash_keys`: a project's flags or continuity hash keys (the flag snapshots).
 * - `cohorts`: a cohort's definition (its copy beside the events, and its calculation).
 * - `persons`: persons and distinct ids of a project (those named, or all of it when the list
 *   would not fit a notification), which other processes holding the project read again.
 */
export type ChangeKind = 'management' | 'flags' | 'hash_keys' | 'cohorts' | 'persons';

export interface Change {
  kind: ChangeKind;
  teamId?: number;
  id?: number;
  /** `persons`: the person uuids and distinct ids that changed; absent: any of the project's. */
  keys?: { persons: string[]; distinctIds: string[] };
}

/** PostgreSQL refuses a notification payload of 8,000 bytes or more. */
const MAX_PAYLOAD = 7_900;

/**
 * A change's keys as notifications that each fit the payload limit (a large flush names
 * thousands of persons: other processes read those again instead of the whole project). A
 * key too long for any notification alone sends the change without keys: the project is read
 * again whole.
 */
function keyPayloads(base: object, keys: { persons: string[]; distinctIds: string[] }): string[] {
  const room = MAX_PAYLOAD - Buffer.byteLength(JSON.stringify({ ...base, p: [], d: [] }));
  const out: string[] = [];
  let p: string[] = [];
  let d: string[] = [];
  let used = 0;
  const emit = () => {
    if (p.length || d.length) out.push(JSON.stringify({ ...base, p, d }));
    p = [];
    d = [];
    used = 0;
  };
  for (const [list, key] of [...keys.persons.map((k) => ['p', k] as const), ...keys.distinctIds.map((k) => ['d', k] as const)]) {
    const size = Buffer.byteLength(JSON.stringify(key)) + 1;
    if (size > room) return [JSON.stringify(base)];
    if (used + size > room) emit();
    (list === 'p' ? p : d).push(key);
    used += size;
  }
  emit();
  return out.length ? out : [JSON.stringify({ ...base, p: [], d: [] })];
}

export interface Changes {
  publish(tx: PgTx, change: Change): Promise<void>;
  /** Changes made by other processes (never this one's own). */
  subscribe(kind: ChangeKind, listener: (change: Change) => void): void;
  /** Called when changes may have been missed (the listening connection was lost and came back). */
  onMissed(listener: () => void): void;
}

const CHANNEL = 'hogbase_changes';

export async function listenForChanges(pg: Pg, onError: (error: unknown) => void = () => undefined): Promise<Changes> {
  const origin = uuidv4();
  const listeners = new Map<ChangeKind, Array<(change: Change) => void>>();
  const missed: Array<() => void> = [];
  const deliver = (payload: string) => {
    try {
      const message = JSON.parse(payload) as { o: string; k: ChangeKind; t?: number; i?: number; p?: string[]; d?: string[] };
      if (message.o === origin) return;
      const change: Change = { kind: message.k, teamId: message.t, id: message.i, ...(message.p ? { keys: { persons: message.p, distinctIds: message.d ?? [] } } : {}) };
      for (const listener of listeners.get(change.kind) ?? []) listener(change);
    } catch (error) {
      onError(error);
    }
  };
  await pg.listen(CHANNEL, deliver, () => {
    for (const listener of missed) listener();
  });
  return {
    async publish(tx, change) {
      const base = { o: origin, k: change.kind, t: change.teamId, i: change.id };
      const payloads = change.keys ? keyPayloads(base, change.keys) : [JSON.stringify(base)];
      for (const payload of payloads) await tx.run('SELECT pg_notify($1, $2)', [CHANNEL, payload]);
    },
    subscribe(kind, listener) {
      listeners.set(kind, [...(listeners.get(kind) ?? []), listener]);
    },
    onMissed(listener) {
      missed.push(listener);
    },
  };
}
