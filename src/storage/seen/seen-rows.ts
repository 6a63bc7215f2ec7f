import type { PropertyType } from '../../core/ingest/property-type';
import { uuidv4 } from '../../ids';
import { chunks } from '../chunks';
import type { Database } from '../db';

/** What the seen tracker writes, and reads back once to start from, in an engine's tables. */
export interface SeenRows {
  loadKnown(): Promise<{
    events: Array<{ teamId: number; name: string; lastSeen: number }>;
    properties: Array<{ teamId: number; kind: string; name: string; typed: boolean }>;
    pairs: Array<{ teamId: number; event: string; property: string }>;
  }>;
  /**
   * In one transaction: event definitions (a later last-seen time replaces an earlier one),
   * property definitions (the first type seen stays, as PostHog's), event name–property pairs.
   */
  write(batch: SeenBatch, now: Date): Promise<void>;
}

export interface SeenBatch {
  events: ReadonlyArray<{ teamId: number; name: string; lastSeen: number }>;
  /** Each (team, kind, name) at most once. */
  properties: ReadonlyArray<{ teamId: number; kind: string; name: string; type: PropertyType | null }>;
  pairs: ReadonlyArray<{ teamId: number; event: string; property: string }>;
}

const ROWS_PER_STATEMENT = 500;

/** What the tracker knows at start, read the same way from either engine (the statements take no parameters). */
export async function loadKnownRows(q: { query<T>(sql: string): Promise<T[]> }) {
  const events = await q.query<{ team_id: number; name: string; last_seen_at: Date | null }>('SELECT team_id, name, last_seen_at FROM event_definitions');
  const properties = await q.query<{ team_id: number; kind: string; name: string; typed: boolean }>(
    'SELECT team_id, kind, name, property_type IS NOT NULL AS typed FROM property_definitions',
  );
  const pairs = await q.query<{ team_id: number; event: string; property: string }>('SELECT team_id, event, property FROM event_properties');
  return {
    events: events.map((r) => ({ teamId: Number(r.team_id), name: r.name, lastSeen: r.last_seen_at?.getTime() ?? 0 })),
    properties: properties.map((r) => ({ teamId: Number(r.team_id), kind: r.kind, name: r.name, typed: r.typed })),
    pairs: pairs.map((r) => ({ teamId: Number(r.team_id), event: r.event, property: r.property })),
  };
}

/** `(?, ?, …), (?, ?, …)`: `rows` groups of `width` parameters. */
const placeholders = (rows: number, width: number): string => Array(rows).fill(`(${Array(width).fill('?').join(', ')})`).join(', ');

export function createSeenRows(db: Database): SeenRows {
  return {
    loadKnown: () => loadKnownRows(db),

    async write(batch, now) {
      // Many rows a statement: one statement a row kept the write connection (every load behind
      // it) busy for seconds when a request brought thousands of new property keys.
      await db.transaction(async (tx) => {
        for (const chunk of chunks(batch.events, ROWS_PER_STATEMENT)) {
          await tx.run(
            `INSERT INTO event_definitions (id, team_id, name, created_at, last_seen_at) VALUES ${placeholders(chunk.length, 5)}
             ON CONFLICT (team_id, name) DO UPDATE SET last_seen_at = greatest(event_definitions.last_seen_at, excluded.last_seen_at)`,
            chunk.flatMap((e) => [uuidv4(), e.teamId, e.name, now, new Date(e.lastSeen)]),
          );
        }
        // The first type seen stays (PostHog's too): a later value of another type does not change it.
        for (const chunk of chunks(batch.properties, ROWS_PER_STATEMENT)) {
          await tx.run(
            `INSERT INTO property_definitions (id, team_id, name, kind, is_numerical, property_type, tags, created_at) VALUES ${placeholders(chunk.length, 8)}
             ON CONFLICT (team_id, kind, name) DO UPDATE SET property_type = coalesce(property_definitions.property_type, excluded.property_type),
               is_numerical = coalesce(property_definitions.property_type, excluded.property_type, '') = 'Numeric'`,
            chunk.flatMap((p) => [uuidv4(), p.teamId, p.name, p.kind, p.type === 'Numeric', p.type, '[]', now]),
          );
        }
        for (const chunk of chunks(batch.pairs, ROWS_PER_STATEMENT)) {
          await tx.run(
            `INSERT INTO event_properties (team_id, event, property) VALUES ${placeholders(chunk.length, 3)} ON CONFLICT DO NOTHING`,
            chunk.flatMap((p) => [p.teamId, p.event, p.property]),
          );
        }
      });
    },
  };
}
