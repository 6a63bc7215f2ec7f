import { t } from 'elysia';

/** PostHog's PersonalAPIKeySerializer. `value` is the secret, present only in the answer to its creation. */
export const PersonalApiKeyResponse = t.Object({
  id: t.String(),
  label: t.String(),
  value: t.Union([t.String(), t.Null()]),
  mask_value: t.String(),
  created_at: t.String(),
  last_used_at: t.Union([t.String(), t.Null()]),
  user_id: t.Integer(),
  scopes: t.Array(t.String()),
  scoped_teams: t.Union([t.Array(t.Integer()), t.Null()]),
  scoped_organizations: t.Union([t.Array(t.String()), t.Null()]),
});

export const PersonalApiKeyCreateBody = t.Object({
  label: t.String({ minLength: 1, maxLength: 40 }),
  /** Keys here always carry every permission of their user: only `["*"]` is accepted. */
  scopes: t.Optional(t.Array(t.String())),
});

export const PersonalApiKeyParams = t.Object({ id: t.String() });
