import { uuidv4 } from '../../ids';
import type { Pg, PgTx } from './client';

/**
 * What one server process tells the others sharing its database, so their caches drop what
 * changed (LISTEN/NOTIFY; ~10 ms here). A change is sent inside the transaction that made it:
 * PostgreSQL delivers it on commit, and never for a rollback.
 * - `management`: an organization, user, key or project changed (the project and key caches).
 * - `flags` / `hash_keys`: a project's flags or continuity hash keys (the flag snapshots).
 * - `cohorts`: a cohort's definition (its copy beside the events, and its calculation).
 */
export type ChangeKind = 'management' | 'flags' | 'hash_keys' | 'cohorts';

export interface Change {
  kind: ChangeKind;
  teamId?: number;
  id?: number;
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
      const message = JSON.parse(payload) as { o: string; k: ChangeKind; t?: number; i?: number };
      if (message.o === origin) return;
      const change: Change = { kind: message.k, teamId: message.t, id: message.i };
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
      await tx.run('SELECT pg_notify($1, $2)', [CHANNEL, JSON.stringify({ o: origin, k: change.kind, t: change.teamId, i: change.id })]);
    },
    subscribe(kind, listener) {
      listeners.set(kind, [...(listeners.get(kind) ?? []), listener]);
    },
    onMissed(listener) {
      missed.push(listener);
    },
  };
}
