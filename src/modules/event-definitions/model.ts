import { t } from 'elysia';
import { EmbeddedUser, PageQuery } from '../../http/schemas';

export const DefinitionParams = t.Object({ project_id: t.String() });
export const DefinitionIdParams = t.Object({ project_id: t.String(), id: t.String({ description: 'Event definition id (UUID).' }) });

export const DefinitionListQuery = t.Object({
  ...PageQuery.properties,
  search: t.Optional(t.String({ description: 'Case-insensitive match on the name; every whitespace-separated term has to match.' })),
  event_type: t.Optional(
    t.Union([t.Literal('event'), t.Literal('event_custom'), t.Literal('event_posthog')], {
      description: '`event_custom`: names without a `$` prefix; `event_posthog`: only names with one.',
    }),
  ),
  ordering: t.Optional(
    t.String({
      description: 'Comma-separated sort keys (name, last_seen_at, last_seen_at::date, created_at, created_at::date), `-` for descending. Default `-last_seen_at::date,name`.',
    }),
  ),
});

export const DefinitionPatchBody = t.Object({
  owner: t.Optional(t.Union([t.Integer(), t.Null()], { description: 'Id of a user of the organization.' })),
  description: t.Optional(t.Union([t.String(), t.Null()])),
  tags: t.Optional(t.Array(t.String())),
  verified: t.Optional(t.Boolean({ description: 'true records who verified it and when; false clears both.' })),
  post_to_chat: t.Optional(t.Boolean()),
});

const Nullable = <T extends Parameters<typeof t.Optional>[0]>(schema: T) => t.Union([schema, t.Null()]);

export const EventDefinition = t.Object({
  id: t.String(),
  name: t.String(),
  owner: Nullable(t.Integer()),
  description: Nullable(t.String()),
  tags: t.Array(t.String()),
  volume_30_day: Nullable(t.Integer({ description: 'Events with this name in the last 30 days; null when events are not available.' })),
  query_usage_30_day: Nullable(t.Integer({ description: 'Event queries that named this event in the last 30 days.' })),
  created_at: Nullable(t.String()),
  updated_at: Nullable(t.String()),
  updated_by: Nullable(EmbeddedUser),
  last_seen_at: Nullable(t.String()),
  last_updated_at: Nullable(t.String()),
  verified: t.Boolean(),
  verified_at: Nullable(t.String()),
  verified_by: Nullable(EmbeddedUser),
  is_action: t.String({ description: "A string, as the spec types it: 'false' (no actions exist here)." }),
  action_id: t.Null(),
  is_calculating: t.Boolean(),
  last_calculated_at: t.Null(),
  created_by: t.Null(),
  post_to_chat: t.Boolean(),
});
