import type { Database } from '../db';
import { eventDefinitionUpdate, propertyDefinitionUpdate, setClause } from '../definitions/definition-updates';
import type { DefinitionsStore } from '../definitions/definitions-store';
import { createEventDefinitionStore, filters, orderBy, toEventDefinition } from '../definitions/event-definitions';
import type { EventsSourceRef } from '../definitions/events-source';
import { source, toPropertyDefinition } from '../definitions/property-definitions';
import { isUuid, numbered, type Pg } from './client';

/**
 * Event and property definitions, event name–property pairs and query usage in PostgreSQL.
 * The listings' conditions are the ones the DuckDB store builds (plain SQL both engines read,
 * every value bound); an event's 30-day volume is counted where the events are (DuckDB).
 */

const EVENT_COLUMNS = `id::text AS id, team_id, name, created_at, last_seen_at, owner, description, tags::text AS tags, verified, verified_at,
  verified_by, updated_at, updated_by, last_updated_at, post_to_chat`;
const PROPERTY_COLUMNS = `pd.id::text AS id, pd.name, pd.kind, pd.property_type, pd.is_numerical, pd.description, pd.tags::text AS tags, pd.updated_at, pd.updated_by`;

/** Tags are JSON, bound as text (a string bound as json would be a JSON string). */
const jsonCast = (column: string) => (column === 'tags' ? '::text::json' : '');

/** A UTC day as PostgreSQL's `date` text. */
const day = (at: Date) => at.toISOString().slice(0, 10);

export function createPostgresDefinitionsStore(pg: Pg, db: Database, events: EventsSourceRef): DefinitionsStore {
  const getEventDefinition = async (teamId: number, id: string) => {
    if (!isUuid(id)) return null;
    const rows = await pg.query(`SELECT ${EVENT_COLUMNS} FROM event_definitions WHERE team_id = $1 AND id = $2`, [teamId, id]);
    return rows.length ? toEventDefinition(rows[0]) : null;
  };
  const getPropertyDefinition = async (teamId: number, id: string) => {
    if (!isUuid(id)) return null;
    const rows = await pg.query(`SELECT ${PROPERTY_COLUMNS}, NULL AS seen FROM property_definitions AS pd WHERE pd.team_id = $1 AND pd.id = $2`, [teamId, id]);
    return rows.length ? toPropertyDefinition(rows[0]) : null;
  };
  return {
    getEventDefinition,

    async listEventDefinitions(teamId, query) {
      const { where, params } = filters(teamId, query);
      const [{ n }] = await pg.query<{ n: string }>(numbered(`SELECT count(*) AS n FROM event_definitions WHERE ${where}`), params);
      const rows = await pg.query(numbered(`SELECT ${EVENT_COLUMNS} FROM event_definitions WHERE ${where} ORDER BY ${orderBy(query)} LIMIT ? OFFSET ?`), [
        ...params,
        query.limit,
        query.offset,
      ]);
      return { count: Number(n), results: rows.map(toEventDefinition) };
    },

    async updateEventDefinition(teamId, id, patch, userId, now) {
      const current = await getEventDefinition(teamId, id);
      if (!current) return null;
      const { sql, params } = setClause(eventDefinitionUpdate(current, patch, userId, now), jsonCast);
      await pg.run(numbered(`UPDATE event_definitions SET ${sql} WHERE id = ? AND team_id = ?`), [...params, id, teamId]);
      return getEventDefinition(teamId, id);
    },

    async recordEventQueryUsage(teamId, eventNames, at = new Date()) {
      const names = [...new Set(eventNames.filter((name) => typeof name === 'string' && name))];
      if (!names.length) return;
      await pg.run(
        `INSERT INTO event_query_usage (team_id, event, day, count) SELECT $1, e, $2::date, 1 FROM unnest($3::text[]) AS e
         ON CONFLICT (team_id, event, day) DO UPDATE SET count = event_query_usage.count + 1`,
        [teamId, day(at), names],
      );
    },

    async eventQueryUsage(teamId, names, since) {
      if (!names.length) return new Map<string, number>();
      const rows = await pg.query<{ event: string; n: string }>(
        'SELECT event, sum(count) AS n FROM event_query_usage WHERE team_id = $1 AND day >= $2::date AND event = ANY($3::text[]) GROUP BY event',
        [teamId, day(since), names],
      );
      return new Map(rows.map((r) => [r.event, Number(r.n)]));
    },

    eventVolumes: createEventDefinitionStore(db, events).eventVolumes,

    getPropertyDefinition,

    async listPropertyDefinitions(teamId, query) {
      const { from, seen, where, params } = source(teamId, query);
      const [{ n }] = await pg.query<{ n: string }>(numbered(`SELECT count(*) AS n FROM ${from} WHERE ${where}`), params);
      const rows = await pg.query(
        numbered(`SELECT ${PROPERTY_COLUMNS}, ${seen} AS seen FROM ${from} WHERE ${where} ORDER BY seen DESC NULLS LAST, pd.name ASC LIMIT ? OFFSET ?`),
        [...params, query.limit, query.offset],
      );
      return { count: Number(n), results: rows.map(toPropertyDefinition) };
    },

    async updatePropertyDefinition(teamId, id, patch, userId, now) {
      if (!(await getPropertyDefinition(teamId, id))) return null;
      const { sql, params } = setClause(propertyDefinitionUpdate(patch, userId, now), jsonCast);
      await pg.run(numbered(`UPDATE property_definitions SET ${sql} WHERE team_id = ? AND id = ?`), [...params, teamId, id]);
      return getPropertyDefinition(teamId, id);
    },

    async eventNames(teamId) {
      return (await pg.query<{ name: string }>('SELECT name FROM event_definitions WHERE team_id = $1 ORDER BY name', [teamId])).map((r) => r.name);
    },

    async propertyNames(teamId, kind) {
      const rows = await pg.query<{ name: string; is_numerical: boolean }>(
        'SELECT name, is_numerical FROM property_definitions WHERE team_id = $1 AND kind = $2 ORDER BY name',
        [teamId, kind],
      );
      return rows.map((r) => ({ name: r.name, isNumerical: r.is_numerical }));
    },

    async deleteTeam(teamId) {
      await pg.transaction(async (tx) => {
        for (const table of ['event_definitions', 'property_definitions', 'event_properties', 'event_query_usage']) {
          await tx.run(`DELETE FROM ${table} WHERE team_id = $1`, [teamId]);
        }
      });
    },
  };
}
