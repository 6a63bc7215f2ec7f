import { createHash, randomBytes } from 'node:crypto';

/** Ids, tokens and hashes. Randomness and the clock live here, outside the pure core. */

/** A time-ordered UUID (version 7): events made by the server sort by creation. */
export const uuidv7 = (now: number = Date.now()): string => Bun.randomUUIDv7('hex', now);

export const uuidv4 = (): string => crypto.randomUUID();

/** A request's seed for the ids of its events without a client uuid (see `seededUuids`): 16 random hex digits. */
export const newUuidSeed = (): string => randomBytes(8).toString('hex');

/**
 * The ids of a request's events that came without a uuid, in order: version 7 at `ms`, the rest
 * of the bits from `seed` (random per request, logged with it) and the event's place. A request
 * processed again (after a crash before its rows were committed where they go) names its events
 * as the first time, so a table that reads a repeated uuid once reads them once.
 */
export function seededUuids(ms: number, seed: string): () => string {
  if (!/^[0-9a-f]{16}$/.test(seed)) throw new Error('a uuid seed is 16 hex digits');
  const time = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0').slice(-12);
  const head = `${time.slice(0, 8)}-${time.slice(8, 12)}-7${seed.slice(0, 3)}-${(8 | (parseInt(seed[3]!, 16) & 3)).toString(16)}${seed.slice(4, 7)}-${seed.slice(7, 12)}`;
  let n = 0;
  // The place as seven hex digits: a leading 1 written and cut off pads it without padStart.
  return () => `${head}${(0x10000000 + (n++ % 0x10000000)).toString(16).slice(1)}`;
}

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
