import type { PropertyType } from '../../core/ingest/property-type';
import type { Database, Row, SqlParam } from '../db';
import { propertyDefinitionUpdate, setClause } from './definition-updates';

/** Property definitions as the API lists and annotates them. */

export type PropertyKind = 'event' | 'person';

export interface PropertyDefinition {
  id: string;
  name: string;
  kind: PropertyKind;
  propertyType: PropertyType | null;
  isNumerical: boolean;
  description: string | null;
  tags: string[];
  updatedAt: Date | null;
  updatedBy: number | null;
  /** Whether an event of the asked-for names carried it; null when no names were asked for. */
  seenOnEvents: boolean | null;
}

export interface PropertyDefinitionPatch {
  description?: string | null;
  tags?: string[];
  propertyType?: PropertyType | null;
}

export interface PropertyDefinitionQuery {
  limit: number;
  offset: number;
  kind: PropertyKind;
  /** Whitespace-separated terms; each must occur in the name (case-insensitive). */
  search?: string;
  /** Event names: `seenOnEvents` says whether one of them carried the property, and those that did come first. */
  eventNames?: string[];
  /** Only the properties the `eventNames` carried (all events' properties when no names are given). */
  onlySeenOnEvents?: boolean;
  numericalOnly?: boolean;
  /** true: only `$feature/…` names; false: none of them. */
  featureFlags?: boolean;
  names?: string[];
  excludedNames?: string[];
  excludeDollarNames?: boolean;
}

export interface PropertyDefinitionStore {
  listPropertyDefinitions(teamId: number, query: PropertyDefinitionQuery): Promise<{ count: number; results: PropertyDefinition[] }>;
  getPropertyDefinition(teamId: number, id: string): Promise<PropertyDefinition | null>;
  /** Null when the id is unknown in the project. */
  updatePropertyDefinition(teamId: number, id: string, patch: PropertyDefinitionPatch, userId: number, now: Date): Promise<PropertyDefinition | null>;
}

const COLUMNS = `pd.id::VARCHAR AS id, pd.name, pd.kind, pd.property_type, pd.is_numerical, pd.description, pd.tags, pd.updated_at, pd.updated_by`;

export const toPropertyDefinition = (r: Row): PropertyDefinition => ({
  id: String(r.id),
  name: String(r.name),
  kind: r.kind as PropertyKind,
  propertyType: (r.property_type as PropertyType | null) ?? null,
  isNumerical: Boolean(r.is_numerical),
  description: (r.description as string | null) ?? null,
  tags: typeof r.tags === 'string' ? JSON.parse(r.tags) : [],
  updatedAt: (r.updated_at as Date | null) ?? null,
  updatedBy: r.updated_by == null ? null : Number(r.updated_by),
  seenOnEvents: r.seen == null ? null : Boolean(r.seen),
});

const list = (values: readonly unknown[]) => values.map(() => '?').join(', ');

/** FROM … WHERE … of a listing, with the `seen` expression; every value bound. */
export function source(teamId: number, query: PropertyDefinitionQuery) {
  const params: SqlParam[] = [];
  let from = 'property_definitions AS pd';
  let seen = 'NULL';
  const names = query.eventNames ?? [];
  // Event properties only: PostHog joins its event-property table for `type=event` alone.
  if (query.kind === 'event' && (names.length || query.onlySeenOnEvents)) {
    const byName = names.length ? ` AND event IN (${list(names)})` : '';
    from += ` ${query.onlySeenOnEvents ? 'JOIN' : 'LEFT JOIN'} (SELECT DISTINCT property FROM event_properties WHERE team_id = ?${byName}) AS ep ON ep.property = pd.name`;
    params.push(teamId, ...names);
    if (names.length) seen = 'ep.property IS NOT NULL';
  }
  const where = ['pd.team_id = ?', 'pd.kind = ?'];
  params.push(teamId, query.kind);
  for (const term of (query.search ?? '').split(/\s+/).filter(Boolean)) {
    where.push('strpos(lower(pd.name), lower(?)) > 0');
    params.push(term);
  }
  if (query.names?.length) {
    where.push(`pd.name IN (${list(query.names)})`);
    params.push(...query.names);
  }
  if (query.excludedNames?.length) {
    where.push(`pd.name NOT IN (${list(query.excludedNames)})`);
    params.push(...query.excludedNames);
  }
  if (query.excludeDollarNames) where.push(`NOT starts_with(pd.name, '$')`);
  // PostHog leaves these two out of numerical lists: they are numbers, not measures.
  if (query.numericalOnly) where.push(`pd.is_numerical AND pd.name NOT IN ('distinct_id', 'timestamp')`);
  if (query.featureFlags !== undefined) where.push(`${query.featureFlags ? '' : 'NOT '}starts_with(pd.name, '$feature/')`);
  return { from, seen, where: where.join(' AND '), params };
}

export function createPropertyDefinitionStore(db: Database): PropertyDefinitionStore {
  const getPropertyDefinition = async (teamId: number, id: string) => {
    const rows = await db.query(`SELECT ${COLUMNS}, NULL AS seen FROM property_definitions AS pd WHERE pd.team_id = ? AND pd.id = TRY_CAST(? AS UUID)`, [teamId, id]);
    return rows.length ? toPropertyDefinition(rows[0]) : null;
  };
  return {
    getPropertyDefinition,

    async listPropertyDefinitions(teamId, query) {
      const { from, seen, where, params } = source(teamId, query);
      const [{ n }] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM ${from} WHERE ${where}`, params);
      const rows = await db.query(`SELECT ${COLUMNS}, ${seen} AS seen FROM ${from} WHERE ${where} ORDER BY seen DESC NULLS LAST, pd.name ASC LIMIT ? OFFSET ?`, [
        ...params,
        query.limit,
        query.offset,
      ]);
      return { count: n, results: rows.map(toPropertyDefinition) };
    },

    async updatePropertyDefinition(teamId, id, patch, userId, now) {
      if (!(await getPropertyDefinition(teamId, id))) return null;
      const { sql, params } = setClause(propertyDefinitionUpdate(patch, userId, now));
      await db.run(`UPDATE property_definitions SET ${sql} WHERE team_id = ? AND id = TRY_CAST(? AS UUID)`, [...params, teamId, id]);
      return getPropertyDefinition(teamId, id);
    },
  };
}
