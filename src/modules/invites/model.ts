import { t } from 'elysia';
import { EmbeddedUser } from '../../http/schemas';

export const InviteParams = t.Object({ parent_lookup_organization_id: t.String({ description: 'Organization id, or `@current`.' }) });
export const InviteIdParams = t.Object({ ...InviteParams.properties, id: t.String({ description: 'Invite id (UUID).' }) });

export const InviteCreateBody = t.Object({
  target_email: t.String({ description: 'E-mail address to invite; its domain part is lower-cased.' }),
  first_name: t.Optional(t.String({ maxLength: 30 })),
  message: t.Optional(t.Union([t.String(), t.Null()])),
  level: t.Optional(t.Integer({ description: 'Membership level: 1 member (default), 8 admin, 15 owner.' })),
  send_email: t.Optional(t.Boolean({ description: 'Accepted for compatibility; no e-mail is sent without a mail server.' })),
});

export const InviteBulkBody = t.Array(InviteCreateBody, {
  description: 'Up to 20 invites; a single invite object is accepted too.',
});

export const Invite = t.Object({
  id: t.String(),
  target_email: t.String(),
  first_name: t.String(),
  emailing_attempt_made: t.Boolean(),
  level: t.Integer(),
  is_expired: t.Boolean(),
  created_by: t.Union([EmbeddedUser, t.Null()]),
  created_at: t.String(),
  updated_at: t.String(),
  message: t.Union([t.String(), t.Null()]),
});
