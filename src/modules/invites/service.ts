import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { MEMBERSHIP_LEVEL, type Invite, type InviteInput, type Principal } from '../../storage';
import { loadEmbeddedUsers, type EmbeddedUserBody } from './embedded-user';

export interface InviteBody {
  target_email: string;
  first_name?: string;
  message?: string | null;
  level?: number;
}

export const MAX_BULK_INVITES = 20;

/** Django's EmailValidator in short: a dotted domain, or `localhost` (its allow-list). */
const EMAIL = /^[^\s@]+@(?:[^\s@]+\.[^\s@]+|localhost)$/i;
const LEVELS = new Set<number>(Object.values(MEMBERSHIP_LEVEL));

/** PostHog's checks, in its order: the address, the level, then membership. */
function toInput(body: InviteBody, callerLevel: number, memberEmails: Set<string>): InviteInput {
  const email = body.target_email.trim();
  if (!EMAIL.test(email)) throw new AppError('invalid_input', 'Enter a valid email address.', 'target_email');
  // The part before @ may be case-sensitive; the domain is not.
  const at = email.lastIndexOf('@');
  const targetEmail = `${email.slice(0, at)}@${email.slice(at + 1).toLowerCase()}`;
  const level = body.level ?? MEMBERSHIP_LEVEL.member;
  if (!LEVELS.has(level)) throw new AppError('invalid_choice', `"${level}" is not a valid choice.`, 'level');
  if (level > callerLevel) throw new AppError('permission_denied', 'You cannot invite a user with a higher permission level than your own.');
  if (memberEmails.has(targetEmail.toLowerCase())) {
    throw new AppError('invalid_input', 'A user with this email address already belongs to the organization.', 'target_email');
  }
  return { targetEmail, firstName: body.first_name ?? '', message: body.message ?? null, level };
}

/** Validate every invite first, then create them all in one transaction. */
export async function createInvites(deps: Deps, principal: Principal, organizationId: string, callerLevel: number, bodies: InviteBody[]) {
  const members = await deps.storage.management.listMembers(organizationId);
  const memberEmails = new Set(members.map((m) => m.email.toLowerCase()));
  const inputs = bodies.map((body) => toInput(body, callerLevel, memberEmails));
  return deps.storage.invites.createInvites(organizationId, inputs, principal.user.id, deps.now());
}

export function toInviteBody(invite: Invite, creators: Map<number, EmbeddedUserBody>, now: Date, expiryDays: number) {
  return {
    id: invite.id,
    target_email: invite.targetEmail,
    first_name: invite.firstName,
    // No mail server is configured, so no e-mail is ever attempted.
    emailing_attempt_made: invite.emailingAttemptMade,
    level: invite.level,
    is_expired: invite.createdAt.getTime() < now.getTime() - expiryDays * 86_400_000,
    created_by: (invite.createdBy !== null && creators.get(invite.createdBy)) || null,
    created_at: invite.createdAt.toISOString(),
    updated_at: invite.updatedAt.toISOString(),
    message: invite.message,
  };
}

/** Response bodies for a list of invites, with their creators looked up once. */
export async function toInviteBodies(deps: Deps, invites: Invite[]) {
  const creators = await loadEmbeddedUsers(deps, invites.map((i) => i.createdBy));
  const now = deps.now();
  return invites.map((invite) => toInviteBody(invite, creators, now, deps.config.INVITE_EXPIRY_DAYS));
}
