import { createHash, randomBytes } from 'node:crypto';

/** Ids, tokens and hashes. Randomness and the clock live here, outside the pure core. */

/** A time-ordered UUID (version 7): events made by the server sort by creation. */
export function uuidv7(now: number = Date.now()): string {
  const bytes = randomBytes(16);
  let ms = now;
  for (let i = 5; i >= 0; i--) {
    bytes[i] = ms & 0xff;
    ms = Math.floor(ms / 256);
  }
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const uuidv4 = (): string => crypto.randomUUID();

/** PostHog's token shape: a prefix and 32 random bytes as URL-safe base64 (43 characters). */
const randomToken = (prefix: string) => prefix + randomBytes(32).toString('base64url');

export const newProjectToken = () => randomToken('phc_');
export const newPersonalApiKey = () => randomToken('phx_');

/** Personal API keys are stored and looked up only by this hash. */
export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** The part of a key safe to show again: PostHog shows the first and last characters. */
export const maskSecret = (secret: string) => `${secret.slice(0, 4)}…${secret.slice(-4)}`;
