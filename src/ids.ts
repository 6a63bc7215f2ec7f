import { createHash, randomBytes } from 'node:crypto';

/** Ids, tokens and hashes. Randomness and the clock live here, outside the pure core. */

/** A time-ordered UUID (version 7): events made by the server sort by creation. */
export const uuidv7 = (now: number = Date.now()): string => Bun.randomUUIDv7('hex', now);

export const uuidv4 = (): string => crypto.randomUUID();

/** PostHog's token shape: a prefix and 32 random bytes as URL-safe base64 (43 characters). */
const randomToken = (prefix: string) => prefix + randomBytes(32).toString('base64url');

export const newProjectToken = () => randomToken('phc_');
export const newPersonalApiKey = () => randomToken('phx_');

/** Personal API keys are stored and looked up only by this hash. */
export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');

/** The part of a key safe to show again: PostHog shows the first and last characters. */
export const maskSecret = (secret: string) => `${secret.slice(0, 4)}…${secret.slice(-4)}`;
