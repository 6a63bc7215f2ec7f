import { AppError } from '../../errors';
import { compileProperty, join, not, sql } from './compile-property';
import { windowStart } from './time-window';
import { isGroup, needsEvents, type BehavioralLeaf, type CohortGroup, type CohortNode, type SqlFragment } from './types';

/**
 * A cohort definition → one query listing the matching persons (`person_uuid`), parameterized
 * throughout. The project scope is bound outside the definition (`p.team_id = ?`), and every
 * table name and column comes from this file, never from the definition.
 */

export interface CompileContext {
  teamId: number;
  now: Date;
  /**
   * The events relation, parenthesized, with the columns team_id, event, distinct_id, timestamp
   * (UTC) and properties (JSON). Needed only by behavioural conditions.
   */
  events?: SqlFragment;
}

const COUNT_OPS = { gte: '>=', lte: '<=', exact: '=' } as const;

function compileBehavioral(leaf: BehavioralLeaf, ctx: CompileContext): SqlFragment {
  const since = windowStart(ctx.now, leaf.time_value, leaf.time_interval);
  const conditions = [
    sql('e.event = ?', leaf.key),
    sql('e.timestamp >= CAST(? AS TIMESTAMP)', since.toISOString()),
    sql('e.timestamp <= CAST(? AS TIMESTAMP)', ctx.now.toISOString()),
    ...(leaf.event_filters ?? []).map((condition) => compileProperty('e.properties', condition, ctx.now)),
  ];
  const where = join(conditions, ' AND ');
  const having =
    leaf.value === 'performed_event_multiple'
      ? sql(` GROUP BY pdi.person_uuid HAVING count(*) ${COUNT_OPS[leaf.operator ?? 'gte']} ?`, leaf.operator_value ?? 1)
      : sql('');
  return {
    sql:
      `p.uuid IN (SELECT pdi.person_uuid FROM cohort_events e JOIN person_distinct_ids pdi` +
      ` ON pdi.team_id = ? AND pdi.distinct_id = e.distinct_id WHERE ${where.sql}${having.sql})`,
    params: [ctx.teamId, ...where.params, ...having.params],
  };
}

/** Membership of another cohort is its current version in `cohort_people`. */
const compileCohortRef = (id: number, ctx: CompileContext) =>
  sql(
    'p.uuid IN (SELECT cp.person_uuid FROM cohort_people cp JOIN cohorts c ON c.id = cp.cohort_id AND c.version = cp.version' +
      ' WHERE c.id = ? AND c.team_id = ?)',
    id,
    ctx.teamId,
  );

export function compileNode(node: CohortNode, ctx: CompileContext): SqlFragment {
  if (isGroup(node)) {
    if (!node.values.length) return sql('TRUE');
    const inner = join(
      node.values.map((value) => compileNode(value, ctx)),
      ` ${node.type} `,
    );
    return { sql: `(${inner.sql})`, params: inner.params };
  }
  const positive =
    node.type === 'person'
      ? compileProperty('p.properties', node, ctx.now)
      : node.type === 'cohort'
        ? compileCohortRef(node.value, ctx)
        : compileBehavioral(node, ctx);
  return node.negation ? not(positive) : positive;
}

/** `SELECT person_uuid` of every person of the project the definition matches. */
export function compileCohortQuery(definition: CohortGroup, ctx: CompileContext): SqlFragment {
  const where = compileNode(definition, ctx);
  const body = sql(`SELECT p.uuid AS person_uuid FROM persons p WHERE p.team_id = ? AND ${where.sql}`, ctx.teamId, ...where.params);
  if (!needsEvents(definition)) return body;
  if (!ctx.events) throw new AppError('unavailable', 'Events are not available to calculate behavioural cohorts.');
  return {
    sql:
      `WITH cohort_events AS (SELECT team_id, event, distinct_id, timestamp, properties FROM ${ctx.events.sql} AS ev` +
      ` WHERE team_id = ?) ${body.sql}`,
    params: [...ctx.events.params, ctx.teamId, ...body.params],
  };
}
