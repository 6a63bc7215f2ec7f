import type { PersonEvent } from './person-updates';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function readUnset(value: unknown): string[] {
  if (Array.isArray(value)) return value.filter((key): key is string => typeof key === 'string');
  if (isObject(value)) return Object.keys(value);
  return [];
}

/**
 * What an event asks of persons, read from its stored properties (`$set`, `$set_once`, `$unset`,
 * `$anon_distinct_id`, `alias`, `$process_person_profile`). Normalization and the replay of
 * logged events after a crash both use it, so a replay plans exactly what ingestion planned.
 */
export function personEventOf(
  base: Pick<PersonEvent, 'uuid' | 'event' | 'distinctId' | 'timestamp'>,
  properties: Record<string, unknown>,
): PersonEvent {
  const { event } = base;
  return {
    ...base,
    properties,
    set: isObject(properties.$set) ? properties.$set : {},
    setOnce: isObject(properties.$set_once) ? properties.$set_once : {},
    unset: readUnset(properties.$unset),
    anonDistinctId: event === '$identify' && '$anon_distinct_id' in properties ? String(properties.$anon_distinct_id) : null,
    alias: (event === '$create_alias' || event === '$merge_dangerously') && properties.alias ? String(properties.alias) : null,
    processPerson: properties.$process_person_profile !== false,
  };
}
