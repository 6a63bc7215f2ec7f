import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import type { PropertyDefinition, PropertyDefinitionQuery } from '../../storage';
import type { PropertyType } from '../../core/ingest/property-type';
import { loadEmbeddedUsers } from '../invites/embedded-user';
import { tagify } from '../../core/definitions/tags';

/**
 * Event properties ingestion records but PostHog never lists: set by SDKs for their own use
 * (`distinct_id`, `$set`), or misleading on events (`$initial_referrer`), or group internals.
 */
const ALWAYS_EXCLUDED_EVENT_PROPERTIES = [
  'distinct_id',
  '$set',
  '$set_once',
  '$initial_referrer',
  '$initial_referring_domain',
  '$groups',
  '$group_type',
  '$group_key',
  '$group_set',
  ...[0, 1, 2, 3, 4].map((i) => `$group_${i}`),
];

export interface ListQuery {
  type?: 'event' | 'person' | 'group' | 'session';
  search?: string;
  event_names?: string;
  filter_by_event_names?: boolean;
  is_numerical?: boolean;
  is_feature_flag?: boolean;
  properties?: string;
  excluded_properties?: string;
  exclude_core_properties?: boolean;
}

/** A query parameter holding a JSON list of strings (as PostHog's UI encodes them). */
function stringList(raw: string | undefined, attr: string): string[] {
  if (raw === undefined || raw === '') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new AppError('invalid_input', 'Expected a JSON list of strings.', attr);
  }
  if (!Array.isArray(parsed) || !parsed.every((v) => typeof v === 'string')) throw new AppError('invalid_input', 'Expected a JSON list of strings.', attr);
  return parsed;
}

/** The listing asked for; null for group and session properties, which are not kept here. */
export function toPropertyQuery(query: ListQuery, page: { limit: number; offset: number }): PropertyDefinitionQuery | null {
  const type = query.type ?? 'event';
  const eventNames = stringList(query.event_names, 'event_names');
  if (type !== 'event' && eventNames.length) throw new AppError('invalid_input', '`event_names` can only be set for `event` type', 'event_names');
  const excluded = stringList(query.excluded_properties, 'excluded_properties');
  if (type !== 'event' && type !== 'person') return null;
  return {
    ...page,
    kind: type,
    search: query.search,
    eventNames,
    onlySeenOnEvents: query.filter_by_event_names === true,
    numericalOnly: query.is_numerical === true,
    featureFlags: query.is_feature_flag,
    names: query.properties ? query.properties.split(',') : undefined,
    excludedNames: type === 'event' ? [...excluded, ...ALWAYS_EXCLUDED_EVENT_PROPERTIES] : excluded,
    excludeDollarNames: type === 'event' && query.exclude_core_properties === true,
  };
}

export interface PatchBody {
  description?: string | null;
  tags?: string[];
  property_type?: PropertyType | null;
}

export const toPropertyPatch = (body: PatchBody) => ({
  description: body.description,
  tags: body.tags === undefined ? undefined : tagify(body.tags),
  propertyType: body.property_type,
});

/** Response bodies, with the users looked up once. */
export async function toPropertyBodies(deps: Deps, definitions: PropertyDefinition[]) {
  const users = await loadEmbeddedUsers(deps, definitions.map((d) => d.updatedBy));
  return definitions.map((d) => ({
    id: d.id,
    name: d.name,
    type: d.kind,
    is_numerical: d.isNumerical,
    property_type: d.propertyType,
    description: d.description,
    tags: d.tags,
    updated_at: d.updatedAt?.toISOString() ?? null,
    updated_by: (d.updatedBy !== null && users.get(d.updatedBy)) || null,
    is_seen_on_filtered_events: d.seenOnEvents,
  }));
}
