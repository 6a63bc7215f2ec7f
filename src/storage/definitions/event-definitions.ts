import type { Database, Row, SqlParam } from '../db';
import { eventDefinitionUpdate, setClause } from './definition-updates';
import type { EventsSourceRef } from './events-source';

/** Event definitions as the API edits them, with their 30-day volume and query usage. */

export interface EventDefinition {
  id: string;
  teamId: number;
  name: string;
  createdAt: Date | null;
  lastSeenAt: Date | null;
  owner: number | null;
  description: string | null;
  tags: string[];
  verified: boolean;
  verifiedAt: Date | null;
  verifiedBy: number | null;
  updatedAt: Date | null;
  updatedBy: number | null;
  lastUpdatedAt: Date | null;
  postToChat: boolean;
}

export interface EventDefinitionPatch {
  owner?: number | null;
  description?: string | null;
  tags?: string[];
  verified?: boolean;
  postToChat?: boolean;
}

/** Sort keys the list accepts (PostHog's `ordering` fields), each a fixed SQL expression. */
export const EVENT_DEFINITION_ORDERINGS = {
  name: 'name',
  last_seen_at: 'last_seen_at',
  'last_seen_at::date': 'CAST(last_seen_at AS DATE)',
  created_at: 'created_at',
  'created_at::date': 'CAST(created_at AS DATE)',
} as const;

export interface EventDefinitionQuery {
  limit: number;
  offset: number;
  /** Whitespace-separated terms; each must occur in the name (case-insensitive). */
  search?: string;
  /** `event_custom`: names without a `$` prefix; `event_posthog`: only those with one. */
  eventType?: 'event' | 'event_custom' | 'event_posthog';
  ordering?: Array<{ field: keyof typeof EVENT_DEFINITION_ORDERINGS; descending: boolean }>;
}

export interface EventDefinitionStore {
  listEventDefinitions(teamId: number, query: EventDefinitionQuery): Promise<{ count: number; results: EventDefinition[] }>;
  getEventDefinition(teamId: number, id: string): Promise<EventDefinition | null>;
  /** Verifying sets who and when (once); unverifying clears them. Null when the id is unknown. */
  updateEventDefinition(teamId: number, id: string, patch: EventDefinitionPatch, userId: number, now: Date): Promise<EventDefinition | null>;
  /** Count one use of each named event by an event query (the events API calls this). */
  recordEventQueryUsage(teamId: number, eventNames: string[], at?: Date): Promise<void>;
  /** Query usage per event name since `since`. */
  eventQueryUsage(teamId: number, names: string[], since: Date): Promise<Map<string, number>>;
  /** Events per name in [since, until]; null when no events source is configured. */
  eventVolumes(teamId: number, names: string[], since: Date, until: Date): Promise<Map<string, number> | null>;
}

const COLUMNS = `id::VARCHAR AS id, team_id, name, created_at, last_seen_at, owner, description, tags, verified, verified_at,
  verified_by, updated_at, updated_by, last_updated_at, post_to_chat`;

export const toEventDefinition = (r: Row): EventDefinition => ({
  id: String(r.id),
  teamId: Number(r.team_id),
  name: String(r.name),
  createdAt: (r.created_at as Date | null) ?? null,
  lastSeenAt: (r.last_seen_at as Date | null) ?? null,
  owner: r.owner == null ? null : Number(r.owner),
  description: (r.description as string | null) ?? null,
  tags: typeof r.tags === 'string' ? JSON.parse(r.tags) : [],
  verified: Boolean(r.verified),
  verifiedAt: (r.verified_at as Date | null) ?? null,
  verifiedBy: r.verified_by == null ? null : Number(r.verified_by),
  updatedAt: (r.updated_at as Date | null) ?? null,
  updatedBy: r.updated_by == null ? null : Number(r.updated_by),
  lastUpdatedAt: (r.last_updated_at as Date | null) ?? null,
  postToChat: Boolean(r.post_to_chat),
});

/** PostHog's default: recently seen days first, then by name; a search puts short names first. */
export function orderBy(query: EventDefinitionQuery): string {
  const requested = (query.ordering ?? []).map((o) => `${EVENT_DEFINITION_ORDERINGS[o.field]} ${o.descending ? 'DESC NULLS LAST' : 'ASC NULLS FIRST'}`);
  const terms = requested.length ? requested : ['CAST(last_seen_at AS DATE) DESC NULLS LAST'];
  if (!requested.length && query.search?.trim()) terms.unshift('length(name) ASC');
  if (!query.ordering?.some((o) => o.field === 'name')) terms.push('name ASC');
  return terms.join(', ');
}

export function filters(teamId: number, query: EventDefinitionQuery) {
  const where = ['team_id = ?'];
  const params: SqlParam[] = [teamId];
  for (const term of (query.search ?? '').split(/\s+/).filter(Boolean)) {
    where.push('strpos(lower(name), lower(?)) > 0');
    params.push(term);
  }
  if (query.eventType === 'event_custom') where.push(`NOT starts_with(name, '$')`);
  if (query.eventType === 'event_posthog') where.push(`starts_with(name, '$')`);
  return { where: where.join(' AND '), params };
}

const countBy = (rows: Array<{ event: string; n: number }>) => new Map(rows.map((r) => [r.event, Number(r.n)]));

export function createEventDefinitionStore(db: Database, events: EventsSourceRef): EventDefinitionStore {
  const getEventDefinition = async (teamId: number, id: string): Promise<EventDefinition | null> => {
    const rows = await db.query(`SELECT ${COLUMNS} FROM event_definitions WHERE team_id = ? AND id = TRY_CAST(? AS UUID)`, [teamId, id]);
    return rows.length ? toEventDefinition(rows[0]) : null;
  };

  return {
    getEventDefinition,

    async listEventDefinitions(teamId, query) {
      const { where, params } = filters(teamId, query);
      const [{ n }] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM event_definitions WHERE ${where}`, params);
      const rows = await db.query(`SELECT ${COLUMNS} FROM event_definitions WHERE ${where} ORDER BY ${orderBy(query)} LIMIT ? OFFSET ?`, [
        ...params,
        query.limit,
        query.offset,
      ]);
      return { count: n, results: rows.map(toEventDefinition) };
    },

    async updateEventDefinition(teamId, id, patch, userId, now) {
      const current = await getEventDefinition(teamId, id);
      if (!current) return null;
      const { sql, params } = setClause(eventDefinitionUpdate(current, patch, userId, now));
      await db.run(`UPDATE event_definitions SET ${sql} WHERE id = TRY_CAST(? AS UUID) AND team_id = ?`, [...params, id, teamId]);
      return getEventDefinition(teamId, id);
    },

    async recordEventQueryUsage(teamId, eventNames, at = new Date()) {
      const names = [...new Set(eventNames.filter((name) => typeof name === 'string' && name))];
      if (!names.length) return;
      const rows = names.map(() => '(?, ?, CAST(? AS DATE), 1)').join(', ');
      await db.run(`INSERT INTO event_query_usage VALUES ${rows} ON CONFLICT DO UPDATE SET count = count + 1`, names.flatMap((name) => [teamId, name, at]));
    },

    async eventQueryUsage(teamId, names, since) {
      if (!names.length) return new Map<string, number>();
      const rows = await db.query<{ event: string; n: number }>(
        `SELECT event, sum(count) AS n FROM event_query_usage WHERE team_id = ? AND day >= CAST(? AS DATE)
         AND event IN (${names.map(() => '?').join(', ')}) GROUP BY event`,
        [teamId, since, ...names],
      );
      return countBy(rows);
    },

    async eventVolumes(teamId, names, since, until) {
      if (events.eventVolumes) return events.eventVolumes(teamId, names, since, until);
      if (!events.current) return null;
      if (!names.length) return new Map<string, number>();
      const relation = await events.current(teamId);
      const rows = await db.query<{ event: string; n: number }>(
        `SELECT event, count(*) AS n FROM ${relation.sql} AS ev WHERE team_id = ? AND timestamp >= CAST(? AS TIMESTAMP)
         AND timestamp <= CAST(? AS TIMESTAMP) AND event IN (${names.map(() => '?').join(', ')}) GROUP BY event`,
        [...(relation.params as SqlParam[]), teamId, since, until, ...names],
      );
      return countBy(rows);
    },
  };
}

