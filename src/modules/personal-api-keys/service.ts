import { AppError } from '../../errors';
import type { PersonalApiKey } from '../../storage';

/** PostHog's cap (MAX_API_KEYS_PER_USER), counted over the keys not revoked. */
export const MAX_KEYS_PER_USER = 10;

export function toKeyResponse(k: PersonalApiKey, value: string | null = null) {
  return {
    id: k.id,
    label: k.label,
    value,
    mask_value: k.maskValue,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    user_id: k.userId,
    scopes: ['*'],
    scoped_teams: null,
    scoped_organizations: null,
  };
}

/**
 * Scoped keys are not supported: a key asked for with fewer rights must not be made with all of
 * them, so anything but `["*"]` is refused rather than ignored.
 */
export function checkScopes(scopes: readonly string[] | undefined): void {
  if (scopes === undefined || (scopes.length === 1 && scopes[0] === '*')) return;
  throw new AppError('invalid_input', 'Only the scope "*" is supported: a key has every permission of its user.', 'scopes');
}

export function checkKeyCount(active: number): void {
  if (active >= MAX_KEYS_PER_USER) {
    throw new AppError('invalid_input', `You can only have ${MAX_KEYS_PER_USER} personal API keys. Remove an existing key before creating a new one.`);
  }
}
