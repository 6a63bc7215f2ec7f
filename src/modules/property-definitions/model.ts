import { t } from 'elysia';
import { EmbeddedUser, PageQuery } from '../../http/schemas';

export const DefinitionParams = t.Object({ project_id: t.String() });
export const DefinitionIdParams = t.Object({ project_id: t.String(), id: t.String({ description: 'Property definition id (UUID).' }) });

const Flag = (description: string) => t.Optional(t.BooleanString({ description }));

export const PropertyDefinitionListQuery = t.Object({
  ...PageQuery.properties,
  type: t.Optional(
    t.Union([t.Literal('event'), t.Literal('person'), t.Literal('group'), t.Literal('session')], {
      description: 'Which properties (default event). No group or session properties are kept here: those lists are empty.',
    }),
  ),
  search: t.Optional(t.String({ description: 'Case-insensitive match on the name; every whitespace-separated term has to match.' })),
  event_names: t.Optional(
    t.String({ description: 'JSON list of event names (type=event only): `is_seen_on_filtered_events` says whether one of them carried the property, and those that did come first.' }),
  ),
  filter_by_event_names: Flag('true: only the properties the `event_names` events carried.'),
  is_numerical: Flag('true: only numerical properties (false: no filter, as PostHog).'),
  is_feature_flag: Flag('true: only `$feature/…` properties; false: none of them.'),
  properties: t.Optional(t.String({ description: 'Comma-separated names: only these.' })),
  excluded_properties: t.Optional(t.String({ description: 'JSON list of names to leave out.' })),
  exclude_core_properties: Flag('true: leave out the `$` properties PostHog defines (type=event).'),
  exclude_hidden: Flag('Accepted for PostHog clients; no property is hidden here.'),
  group_type_index: t.Optional(t.Numeric({ description: 'Accepted for PostHog clients (type=group).' })),
});

// The values of PROPERTY_TYPES (core/ingest/property-type.ts), spelled out so the wire type is exact.
const PropertyTypeValue = (description: string) =>
  t.Union([t.Literal('String'), t.Literal('Numeric'), t.Literal('Boolean'), t.Literal('DateTime'), t.Null()], { description });

export const PropertyDefinitionPatchBody = t.Object({
  description: t.Optional(t.Union([t.String(), t.Null()])),
  tags: t.Optional(t.Array(t.String())),
  property_type: t.Optional(PropertyTypeValue('Overrides the detected type; is_numerical follows it.')),
});

const Nullable = <T extends Parameters<typeof t.Optional>[0]>(schema: T) => t.Union([schema, t.Null()]);

export const PropertyDefinition = t.Object({
  id: t.String(),
  name: t.String(),
  type: t.Union([t.Literal('event'), t.Literal('person')]),
  is_numerical: t.Boolean(),
  property_type: PropertyTypeValue('Detected from the first value that shows a type; null until one does.'),
  description: Nullable(t.String()),
  tags: t.Array(t.String()),
  updated_at: Nullable(t.String()),
  updated_by: Nullable(EmbeddedUser),
  is_seen_on_filtered_events: Nullable(t.Boolean({ description: 'Whether an event of `event_names` carried it; null without `event_names`.' })),
});
