import { createHash, randomBytes } from 'node:crypto';

/** Ids, tokens and hashes. Randomness and the clock live here, outside the pure core. */

/** A time-ordered UUID (version 7): events made by the server sort by creation. */
export const uuidv7 = (now: number = Date.now()): string => Bun.randomUUIDv7('hex', now);

export const uuidv4 = (): string => crypto.randomUUID();

/**
 * A version-7 UUID for `ms` whose other bits come from `seed`: the same seed gives the same id.
 * A cluster writer names the events of a logged request without a client uuid so, by the
 * request's log id and the event's place in it, and a request processed again after a writer's
 * crash gets the ids it got the first time.
 */
export function uuidv7FromSeed(ms: number, seed: string): string {
  const bytes = createHash('sha256').update(seed).digest();
  const time = BigInt(Math.max(0, Math.floor(ms)));
  for (let i = 0; i < 6; i++) bytes[i] = Number((time >> BigInt(8 * (5 - i))) & 0xffn);
  bytes[6] = 0x70 | (bytes[6]! & 0x0f);
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** PostHog's token shape: a prefix and 32 random bytes as URL-safe base64 (43 characters). */
const randomToken = (prefix: string) => prefix + randomBytes(32).toString('base64url');

export const newProjectToken = () => randomToken('phc_');
export const newPersonalApiKey = () => randomToken('phx_');

/** Personal API keys are stored and looked up only by this hash. */
export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** The part of a key safe to show again: PostHog shows the first and last characters. */
export const maskSecret = (secret: string) => `${secret.slice(0, 4)}…${secret.slice(-4)}`;
