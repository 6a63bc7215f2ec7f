import { AppError } from '../../errors';
import {
  PERSON_OPERATORS,
  TIME_INTERVALS,
  type BehavioralLeaf,
  type CohortGroup,
  type CohortLeaf,
  type CohortNode,
  type PropertyCondition,
  type PropertyOperator,
  type TimeInterval,
} from './types';

/**
 * Validate a cohort's `filters` (or, when it has none, its legacy `groups`) into one definition
 * tree. Everything a calculation cannot honour is refused here with a 400, so a stored cohort
 * always compiles.
 */

export type Raw = Record<string, unknown>;
export const isObject = (value: unknown): value is Raw => typeof value === 'object' && value !== null && !Array.isArray(value);
export const invalid = (detail: string, attr: string) => new AppError('invalid_input', detail, attr);

const COHORT_TYPES = new Set(['cohort', 'precalculated-cohort', 'static-cohort']);
const COUNT_OPERATORS: Record<string, 'gte' | 'lte' | 'exact'> = { gte: 'gte', lte: 'lte', exact: 'exact', eq: 'exact' };

const toInteger = (value: unknown): number | null => {
  const n = typeof value === 'string' && /^\d+$/.test(value.trim()) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) ? n : null;
};

const missing = (kind: string, key: string, attr: string) => invalid(`Missing required keys for ${kind} filter: ${key}`, attr);

export function parseCondition(raw: Raw, kind: string, attr: string): PropertyCondition {
  if (typeof raw.key !== 'string' || !raw.key) throw missing(kind, 'key', attr);
  const operator = (raw.operator ?? 'exact') as PropertyOperator;
  if (!PERSON_OPERATORS.includes(operator)) throw invalid(`Operator "${String(operator)}" is not supported in cohorts.`, attr);
  if ((raw.value === undefined || raw.value === null) && operator !== 'is_set' && operator !== 'is_not_set') {
    throw missing(kind, 'value', attr);
  }
  return { key: raw.key, value: raw.value, operator };
}

function parseBehavioral(raw: Raw, attr: string): BehavioralLeaf {
  if (raw.value !== 'performed_event' && raw.value !== 'performed_event_multiple') {
    throw invalid(`Behavioral filter "${String(raw.value)}" is not supported.`, attr);
  }
  if ((raw.event_type ?? 'events') !== 'events') throw invalid('Behavioral filters on actions are not supported.', attr);
  if (typeof raw.key !== 'string' || !raw.key) throw missing('behavioral', 'key', attr);
  const timeValue = toInteger(raw.time_value);
  if (timeValue === null || timeValue < 1) throw missing('behavioral', 'time_value', attr);
  if (!TIME_INTERVALS.includes(raw.time_interval as TimeInterval)) throw missing('behavioral', 'time_interval', attr);
  const leaf: BehavioralLeaf = {
    type: 'behavioral',
    key: raw.key,
    value: raw.value,
    event_type: 'events',
    time_value: timeValue,
    time_interval: raw.time_interval as TimeInterval,
    negation: raw.negation === true,
  };
  if (raw.value === 'performed_event_multiple') {
    const operator = COUNT_OPERATORS[String(raw.operator ?? 'gte')];
    const count = toInteger(raw.operator_value ?? 1);
    if (!operator || count === null) throw invalid('performed_event_multiple needs operator (gte, lte, exact) and operator_value.', attr);
    Object.assign(leaf, { operator, operator_value: count });
  }
  if (Array.isArray(raw.event_filters) && raw.event_filters.length) {
    leaf.event_filters = raw.event_filters.map((f) => parseCondition(isObject(f) ? f : {}, 'event', attr));
  }
  return leaf;
}

export function parseLeaf(raw: Raw, attr: string): CohortLeaf {
  const type = String(raw.type ?? '');
  if (type === 'person') return { type: 'person', ...parseCondition(raw, 'person', attr), negation: raw.negation === true };
  if (type === 'behavioral') return parseBehavioral(raw, attr);
  if (COHORT_TYPES.has(type)) {
    const id = toInteger(raw.value);
    if (id === null) throw missing('cohort', 'value', attr);
    return { type: 'cohort', key: 'id', value: id, negation: raw.negation === true };
  }
  throw invalid(`Filters of type "${type}" are not supported in cohorts.`, attr);
}

export function parseNode(raw: unknown, attr: string): CohortNode {
  if (!isObject(raw)) throw invalid('Every filter must be an object.', attr);
  if (raw.type === 'AND' || raw.type === 'OR') {
    if (!Array.isArray(raw.values)) throw invalid(`A ${raw.type} group needs a list of values.`, attr);
    return { type: raw.type, values: raw.values.map((value) => parseNode(value, attr)) };
  }
  return parseLeaf(raw, attr);
}

/** PostHog's `filters`: `{properties: <group> | [<property>, ...] | {}}`. */
export function parseFilters(filters: unknown): CohortGroup {
  if (!isObject(filters) || !('properties' in filters)) throw invalid("Must contain a 'properties' key with type and values", 'filters');
  const { properties } = filters;
  if (Array.isArray(properties)) return { type: 'AND', values: properties.map((p) => parseLeaf(isObject(p) ? p : {}, 'filters')) };
  if (isObject(properties) && !Object.keys(properties).length) return { type: 'AND', values: [] };
  const node = parseNode(properties, 'filters');
  return 'values' in node && (node.type === 'AND' || node.type === 'OR') ? node : { type: 'AND', values: [node] };
}
