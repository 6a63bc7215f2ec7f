import { invalid, isObject, parseCondition, type Raw } from './parse-definition';
import type { BehavioralLeaf, CohortGroup, CohortNode, PersonLeaf } from './types';

/**
 * PostHog's deprecated cohort `groups`: a list of OR-ed groups, each either person properties
 * (AND-ed) or "performed event `event_id` in the last `days` days" (optionally `count` times).
 */

const ATTR = 'groups';

/** The keys PostHog's `Group.to_dict()` stores for every group, in its order. */
const GROUP_KEYS = ['properties', 'action_id', 'event_id', 'label', 'days', 'count', 'count_operator', 'start_date', 'end_date'] as const;

/** `groups` as a list: PostHog stores a list; an object (the spec's "free-form" shape) is one group. */
function asList(groups: unknown): unknown[] {
  if (groups === null || groups === undefined) return [];
  if (Array.isArray(groups)) return groups;
  if (isObject(groups)) return Object.keys(groups).length ? [groups] : [];
  throw invalid('Groups must be a list of groups.', ATTR);
}

/** Old properties were a `{key: value}` map, and old property lists said `event` for person. */
function personProperties(properties: unknown): PersonLeaf[] {
  const list = Array.isArray(properties)
    ? properties
    : isObject(properties)
      ? Object.entries(properties).map(([key, value]) => ({ key, value, type: 'person' }))
      : [];
  return list.map((raw) => {
    const prop: Raw = isObject(raw) ? raw : {};
    const type = prop.type ?? 'event';
    if (type !== 'event' && type !== 'person') throw invalid(`Filters of type "${String(type)}" are not supported in cohorts.`, ATTR);
    return { type: 'person', ...parseCondition(prop, 'person', ATTR), negation: prop.negation === true };
  });
}

function performedEvent(group: Raw): BehavioralLeaf {
  const count = Math.max(0, Number.parseInt(String(group.count ?? 0), 10) || 0);
  const days = Number.parseInt(String(group.days ?? ''), 10);
  const leaf: BehavioralLeaf = {
    type: 'behavioral',
    key: String(group.event_id),
    value: count ? 'performed_event_multiple' : 'performed_event',
    event_type: 'events',
    time_value: days > 0 ? days : 365,
    time_interval: 'day',
    negation: false,
  };
  if (count) {
    const operator = { gte: 'gte', lte: 'lte', eq: 'exact', exact: 'exact' }[String(group.count_operator ?? 'gte')];
    if (!operator) throw invalid('count_operator must be one of gte, lte, eq.', ATTR);
    Object.assign(leaf, { operator, operator_value: count });
  }
  return leaf;
}

function parseGroup(raw: unknown): CohortNode {
  const group: Raw = isObject(raw) ? raw : {};
  const properties = group.properties;
  if (properties && (!Array.isArray(properties) || properties.length) && (!isObject(properties) || Object.keys(properties).length)) {
    return { type: 'AND', values: personProperties(properties) };
  }
  if (group.action_id) throw invalid('Cohort groups on actions are not supported.', ATTR);
  if (group.event_id) return { type: 'AND', values: [performedEvent(group)] };
  throw invalid('Cohort group needs properties or action_id or event_id', ATTR);
}

/** The legacy groups as one definition: OR of the groups. */
export function parseLegacyGroups(groups: unknown): CohortGroup {
  const list = asList(groups);
  return list.length ? { type: 'OR', values: list.map(parseGroup) } : { type: 'AND', values: [] };
}

/** The groups as PostHog stores them (every key present, null when unset). Validates too. */
export function normalizeLegacyGroups(groups: unknown): Raw[] {
  const list = asList(groups);
  list.forEach(parseGroup);
  return list.map((raw) => Object.fromEntries(GROUP_KEYS.map((key) => [key, (raw as Raw)[key] ?? null])));
}
