import { chunks } from '../chunks';
import { loadKnownRows, type SeenRows } from '../seen/seen-rows';
import type { Pg } from './client';
import { lockLiveProjects } from './live-projects';

/** The seen tracker's writes in PostgreSQL: each kind of row as arrays, many rows a statement. */
export function createPostgresSeenRows(pg: Pg): SeenRows {
  return {
    loadKnown: () => loadKnownRows(pg),

    async write(seen, now) {
      // Two processes upserting the same definitions in another order can deadlock: run again.
      await pg.transaction(async (tx) => {
        // Nothing of a project deleted meanwhile (by another process) is written back.
        const live = await lockLiveProjects(tx, [...seen.events, ...seen.properties, ...seen.pairs].map((r) => r.teamId));
        const batch = {
          events: seen.events.filter((e) => live.has(e.teamId)),
          properties: seen.properties.filter((p) => live.has(p.teamId)),
          pairs: seen.pairs.filter((p) => live.has(p.teamId)),
        };
        for (const chunk of chunks(batch.events, 5_000)) {
          await tx.run(
            `INSERT INTO event_definitions (id, team_id, name, created_at, last_seen_at)
             SELECT gen_random_uuid(), t, n, $1, s::timestamptz FROM unnest($2::integer[], $3::text[], $4::text[]) AS e(t, n, s)
             ON CONFLICT (team_id, name) DO UPDATE SET last_seen_at = greatest(event_definitions.last_seen_at, excluded.last_seen_at)`,
            [now, chunk.map((e) => e.teamId), chunk.map((e) => e.name), chunk.map((e) => new Date(e.lastSeen).toISOString())],
          );
        }
        // The first type seen stays (PostHog's too): a later value of another type does not change it.
        for (const chunk of chunks(batch.properties, 5_000)) {
          await tx.run(
            `INSERT INTO property_definitions (id, team_id, name, kind, is_numerical, property_type, tags, created_at)
             SELECT gen_random_uuid(), t, n, k, coalesce(pt = 'Numeric', false), pt, '[]', $1 FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[]) AS p(t, n, k, pt)
             ON CONFLICT (team_id, kind, name) DO UPDATE SET property_type = coalesce(property_definitions.property_type, excluded.property_type),
               is_numerical = coalesce(property_definitions.property_type, excluded.property_type, '') = 'Numeric'`,
            [now, chunk.map((p) => p.teamId), chunk.map((p) => p.name), chunk.map((p) => p.kind), chunk.map((p) => p.type)],
          );
        }
        for (const chunk of chunks(batch.pairs, 5_000)) {
          await tx.run(
            `INSERT INTO event_properties (team_id, event, property) SELECT * FROM unnest($1::integer[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING`,
            [chunk.map((p) => p.teamId), chunk.map((p) => p.event), chunk.map((p) => p.property)],
          );
        }
      }, { retryConflicts: true });
    },
  };
}
