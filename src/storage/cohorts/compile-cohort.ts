import { AppError } from '../../errors';
import type { Dialect } from '../../core/query/dialect';
import { DUCKDB } from '../../core/query/dialect-duckdb';
import { joinSql, sql, trusted, type SqlFragment } from '../../core/query/sql';
import { compileProperty, not } from '../../core/cohorts/compile-property';
import { windowStart } from '../../core/cohorts/time-window';
import { isGroup, needsEvents, type BehavioralLeaf, type CohortGroup, type CohortNode } from '../../core/cohorts/types';

/**
 * A cohort definition → one query listing the matching persons (`person_uuid`), parameterized
 * throughout. The project scope is bound outside the definition (`p.team_id = ?`); the relations
 * read are named by their engine's caller (`CohortRelations`), the columns here, never by the
 * definition. It lives in storage because it writes whole statements over the cohort and person
 * tables; the property conditions it uses stay in core (compile-property.ts).
 */

/** What the compiled query reads, as storage names it (trusted text, never a request's). */
export interface CohortRelations {
  /** Persons: uuid, team_id, properties, created_at. */
  persons: string;
  /** team_id, distinct_id, person_uuid. */
  distinctIds: string;
  /** Members of each cohort version: cohort_id, person_uuid, version. */
  members: string;
  /** Cohorts: id, team_id, version (the current one). */
  cohorts: string;
}

export interface CompileContext {
  teamId: number;
  now: Date;
  relations: CohortRelations;
  /**
   * The events relation, parenthesized, with the columns team_id, event, distinct_id, timestamp
   * (UTC) and properties (JSON). Needed only by behavioural conditions.
   */
  events?: SqlFragment;
  /** The engine the query is written for (default DuckDB). */
  dialect?: Dialect;
  /**
   * Instead of `events`, where the events are in another engine: a behavioural leaf's matching
   * events (`behavioralEventCondition` in `behavioralWindow`), counted per distinct id there, as
   * a relation with the columns distinct_id and n. Called with the definition's own leaf objects.
   */
  behavioralRows?: (leaf: BehavioralLeaf) => SqlFragment;
}

const COUNT_OPS = { gte: '>=', lte: '<=', exact: '=' } as const;

/** The instants a behavioural leaf's events lie between, both included: the last N intervals up to now. */
export const behavioralWindow = (leaf: BehavioralLeaf, now: Date): { since: Date; until: Date } => ({
  since: windowStart(now, leaf.time_value, leaf.time_interval),
  until: now,
});

const eventFilters = (leaf: BehavioralLeaf, now: Date, d: Dialect, properties: string) =>
  (leaf.event_filters ?? []).map((condition) => compileProperty(properties, condition, now, d));

/** What a behavioural leaf's events are, besides their time (`behavioralWindow`): the event, and its property filters (columns `event`, `properties`). */
export const behavioralEventCondition = (leaf: BehavioralLeaf, now: Date, d: Dialect): SqlFragment =>
  joinSql([sql`event = ${d.bind(leaf.key)}`, ...eventFilters(leaf, now, d, 'properties')], ' AND ');

function compileBehavioral(leaf: BehavioralLeaf, ctx: CompileContext): SqlFragment {
  const d = ctx.dialect ?? DUCKDB;
  const multiple = leaf.value === 'performed_event_multiple';
  const pdi = sql`JOIN ${trusted(ctx.relations.distinctIds)} pdi ON pdi.team_id = ${d.bind(ctx.teamId)} AND pdi.distinct_id = e.distinct_id`;
  const having = (count: string) => sql` GROUP BY pdi.person_uuid HAVING ${trusted(count)} ${trusted(COUNT_OPS[leaf.operator ?? 'gte'])} ${d.bind(leaf.operator_value ?? 1)}`;
  if (ctx.behavioralRows) {
    // Counted per distinct id elsewhere: a person's count is the sum over their distinct ids.
    return sql`p.uuid IN (SELECT pdi.person_uuid FROM ${ctx.behavioralRows(leaf)} e ${pdi}${multiple ? having('sum(e.n)') : trusted('')})`;
  }
  const { since, until } = behavioralWindow(leaf, ctx.now);
  const conditions = [
    sql`e.event = ${d.bind(leaf.key)}`,
    sql`e.timestamp >= ${d.isoInstant(since.toISOString(), false)}`,
    sql`e.timestamp <= ${d.isoInstant(until.toISOString(), false)}`,
    ...eventFilters(leaf, ctx.now, d, 'e.properties'),
  ];
  return sql`p.uuid IN (SELECT pdi.person_uuid FROM cohort_events e ${pdi} WHERE ${joinSql(conditions, ' AND ')}${multiple ? having('count(*)') : trusted('')})`;
}

/** Membership of another cohort is its current version among the members. */
function compileCohortRef(id: number, ctx: CompileContext): SqlFragment {
  const { bind } = ctx.dialect ?? DUCKDB;
  return sql`p.uuid IN (SELECT cp.person_uuid FROM ${trusted(ctx.relations.members)} cp JOIN ${trusted(ctx.relations.cohorts)} c ON c.id = cp.cohort_id AND c.version = cp.version WHERE c.id = ${bind(id)} AND c.team_id = ${bind(ctx.teamId)})`;
}

export function compileNode(node: CohortNode, ctx: CompileContext): SqlFragment {
  if (isGroup(node)) {
    if (!node.values.length) return trusted((ctx.dialect ?? DUCKDB).true);
    return sql`(${joinSql(node.values.map((value) => compileNode(value, ctx)), ` ${node.type} `)})`;
  }
  const positive =
    node.type === 'person'
      ? compileProperty('p.properties', node, ctx.now, ctx.dialect)
      : node.type === 'cohort'
        ? compileCohortRef(node.value, ctx)
        : compileBehavioral(node, ctx);
  return node.negation ? not(positive) : positive;
}

/** `SELECT person_uuid` of every person of the project the definition matches. */
export function compileCohortQuery(definition: CohortGroup, ctx: CompileContext): SqlFragment {
  const { bind } = ctx.dialect ?? DUCKDB;
  const where = compileNode(definition, ctx);
  const body = sql`SELECT p.uuid AS person_uuid FROM ${trusted(ctx.relations.persons)} p WHERE p.team_id = ${bind(ctx.teamId)} AND ${where}`;
  if (!needsEvents(definition) || ctx.behavioralRows) return body;
  if (!ctx.events) throw new AppError('unavailable', 'Events are not available to calculate behavioural cohorts.');
  return sql`WITH cohort_events AS (SELECT team_id, event, distinct_id, timestamp, properties FROM ${ctx.events} AS ev WHERE team_id = ${bind(ctx.teamId)}) ${body}`;
}
