import { t } from 'elysia';
import { EmbeddedUser } from '../../http/schemas';

const Nullable = <T extends Parameters<typeof t.Optional>[0]>(s: T) => t.Union([s, t.Null()]);

/** `key` and `filters` are checked by the core validator, which gives PostHog's messages and `attr`. */
const writable = {
  key: t.Optional(t.Unknown({ description: 'Unique among live flags; letters, digits, `-` and `_`.' })),
  name: t.Optional(t.String({ description: 'The description (PostHog keeps the field name `name`).' })),
  filters: t.Optional(t.Unknown({ description: 'Release conditions, variants and payloads (PostHog `filters` JSON).' })),
  active: t.Optional(t.Boolean()),
  deleted: t.Optional(t.Boolean({ description: 'Soft delete: hard DELETE is not allowed.' })),
  ensure_experience_continuity: t.Optional(Nullable(t.Boolean())),
};

export const FlagCreateBody = t.Object(writable);
export const FlagUpdateBody = t.Object(writable);

export const FlagParams = t.Object({ project_id: t.String(), id: t.String() });
export const ProjectParams = t.Object({ project_id: t.String() });

export const FeatureFlagResponse = t.Object({
  id: t.Integer(),
  name: t.String(),
  key: t.String(),
  filters: t.Record(t.String(), t.Unknown()),
  deleted: t.Boolean(),
  active: t.Boolean(),
  created_by: Nullable(EmbeddedUser),
  created_at: t.String(),
  updated_at: t.String(),
  version: t.Integer(),
  is_simple_flag: t.Boolean(),
  rollout_percentage: Nullable(t.Number({ description: 'Read-only: the single condition’s rollout of a simple flag.' })),
  ensure_experience_continuity: t.Boolean(),
  experiment_set: t.Array(t.Integer()),
  surveys: t.Array(t.Unknown()),
  features: t.Array(t.Unknown()),
  tags: t.Array(t.String()),
  can_edit: t.Boolean(),
});

/** What server SDKs poll for local evaluation (PostHog's `MinimalFeatureFlagSerializer` + `version`). */
export const LocalFlag = t.Object({
  id: t.Integer(),
  team_id: t.Integer(),
  name: t.String(),
  key: t.String(),
  filters: t.Record(t.String(), t.Unknown()),
  deleted: t.Boolean(),
  active: t.Boolean(),
  ensure_experience_continuity: t.Boolean(),
  version: t.Integer(),
});

export const LocalEvaluationResponse = t.Object({
  flags: t.Array(LocalFlag),
  group_type_mapping: t.Record(t.String(), t.String()),
  cohorts: t.Record(t.String(), t.Unknown()),
});

export const LocalEvaluationQuery = t.Object({
  token: t.Optional(t.String()),
  send_cohorts: t.Optional(t.String()),
});
