import { invalidInput } from '../query/limits';
import { propertiesParam } from '../query/filters';
import { matchProperty } from '../flags/match-property';
import type { PropertyFilter } from '../flags/types';

/** What the persons list filters on (query strings; `properties` may come pre-parsed). */
export interface PersonFilterParams {
  search?: string | null;
  distinct_id?: string | null;
  properties?: unknown;
}

export interface FilterablePerson {
  distinctIds: string[];
  properties: Record<string, unknown>;
}

/** Nesting and size bounds, as the events list's property filters have. */
const MAX_DEPTH = 5;
const MAX_FILTERS = 100;

/**
 * The persons list's filters as one predicate: `search` a case-insensitive substring of a distinct
 * id, the email or the name; `distinct_id` one exact distinct id; `properties` PostHog's filter list
 * or `{type: AND|OR, values}` group of `person` filters, matched with the flags service's operator
 * semantics (persons live in memory, so the SQL compiler of the events list does not apply).
 */
export function personFilter(params: PersonFilterParams, now: Date): (person: FilterablePerson) => boolean {
  const tests: Array<(p: FilterablePerson) => boolean> = [];
  const search = params.search?.trim().toLowerCase();
  if (search) {
    const has = (v: unknown) => typeof v === 'string' && v.toLowerCase().includes(search);
    tests.push((p) => p.distinctIds.some(has) || has(p.properties.email) || has(p.properties.name));
  }
  const distinctId = params.distinct_id;
  if (distinctId) tests.push((p) => p.distinctIds.includes(distinctId));
  const properties = propertiesTest(params.properties, now);
  if (properties) tests.push(properties);
  return (p) => tests.every((test) => test(p));
}

type Test = (p: FilterablePerson) => boolean;

function propertiesTest(raw: unknown, now: Date): Test | null {
  const value = propertiesParam(raw);
  if (value === undefined) return null;
  const counter = { n: 0 };
  return node(value, 'properties', 0, now, counter);
}

function node(value: unknown, path: string, depth: number, now: Date, counter: { n: number }): Test {
  if (depth > MAX_DEPTH) throw error(path, `property groups are nested more than ${MAX_DEPTH} deep`);
  if (Array.isArray(value)) return group('AND', value, path, depth, now, counter);
  if (!isObject(value)) throw error(path, 'expected a list of filters or a property group');
  if (Array.isArray(value.values)) {
    if (value.type !== 'AND' && value.type !== 'OR') throw error(path, "a property group's type must be AND or OR");
    return group(value.type, value.values, `${path}.values`, depth, now, counter);
  }
  if (++counter.n > MAX_FILTERS) throw error(path, `more than ${MAX_FILTERS} property filters`);
  return filter(value, path, now);
}

function group(op: 'AND' | 'OR', values: unknown[], path: string, depth: number, now: Date, counter: { n: number }): Test {
  const tests = values.map((v, i) => node(v, `${path}[${i}]`, depth + 1, now, counter));
  if (!tests.length) return () => true;
  return op === 'AND' ? (p) => tests.every((t) => t(p)) : (p) => tests.some((t) => t(p));
}

function filter(f: Record<string, unknown>, path: string, now: Date): Test {
  if (typeof f.key !== 'string') throw error(path, "a filter needs a string 'key'");
  if (f.type !== undefined && f.type !== 'person') throw error(path, `property filter type '${String(f.type).slice(0, 50)}' is not supported on persons`);
  if (f.operator !== undefined && f.operator !== null && typeof f.operator !== 'string') throw error(path, "'operator' must be a string");
  const property: PropertyFilter = { key: f.key, value: f.value, operator: (f.operator as string | null | undefined) ?? 'exact', type: 'person' };
  const negated = f.negation === true;
  return (p) => matchProperty(property, p.properties, now) !== negated;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const error = (path: string, what: string) => invalidInput(`Invalid property filter at ${path}: ${what}`, 'properties');
