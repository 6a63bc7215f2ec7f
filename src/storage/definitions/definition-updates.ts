import type { SqlParam } from '../db';
import type { EventDefinition, EventDefinitionPatch } from './event-definitions';
import type { PropertyDefinitionPatch } from './property-definitions';

/**
 * What an annotation (the API's PATCH) changes in a definition's row, as columns and values:
 * the same for both engines, whose stores each write it with their own UPDATE.
 */

/** A column and the value an update gives it. */
export type Assignment = readonly [column: string, value: SqlParam];

/**
 * Who and when, the fields the patch gives, and verification: verifying records who and when
 * once (verifying again keeps the first); unverifying clears them.
 */
export function eventDefinitionUpdate(current: EventDefinition, patch: EventDefinitionPatch, userId: number, now: Date): Assignment[] {
  const set: Assignment[] = [
    ['updated_by', userId],
    ['updated_at', now],
    ['last_updated_at', now],
  ];
  if (patch.owner !== undefined) set.push(['owner', patch.owner]);
  if (patch.description !== undefined) set.push(['description', patch.description]);
  if (patch.tags !== undefined) set.push(['tags', JSON.stringify(patch.tags)]);
  if (patch.postToChat !== undefined) set.push(['post_to_chat', patch.postToChat]);
  if (patch.verified === false) set.push(['verified', false], ['verified_at', null], ['verified_by', null]);
  else if (patch.verified && !current.verified) set.push(['verified', true], ['verified_at', now], ['verified_by', userId]);
  return set;
}

/** Who and when, and the fields the patch gives; a property type also says whether it is numerical. */
export function propertyDefinitionUpdate(patch: PropertyDefinitionPatch, userId: number, now: Date): Assignment[] {
  const set: Assignment[] = [
    ['updated_by', userId],
    ['updated_at', now],
  ];
  if (patch.description !== undefined) set.push(['description', patch.description]);
  if (patch.tags !== undefined) set.push(['tags', JSON.stringify(patch.tags)]);
  if (patch.propertyType !== undefined) set.push(['property_type', patch.propertyType], ['is_numerical', patch.propertyType === 'Numeric']);
  return set;
}

/**
 * `column = ?, …` of an UPDATE and its values in order; `cast` gives a column's cast where an
 * engine needs one (PostgreSQL binds JSON as text).
 */
export function setClause(set: readonly Assignment[], cast: (column: string) => string = () => ''): { sql: string; params: SqlParam[] } {
  return { sql: set.map(([column]) => `${column} = ?${cast(column)}`).join(', '), params: set.map(([, value]) => value) };
}
