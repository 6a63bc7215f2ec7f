import type { ManagementStore, Principal, Project } from './management/types';

/**
 * Every public request looks its project up by token, and every API request authenticates a
 * personal key and loads its project: 3–4 DuckDB statements before the request's own work
 * (see bench/NOTES.md). This keeps those answers in memory. Every change goes through the
 * management store wrapped here, and every write there clears all of them at once; an entry
 * also expires after a few seconds. An unknown token is remembered briefly, so a client
 * hammering with a bad key does not hammer the database; an unknown personal key is not (a key
 * just created must work at once, and creating one clears the cache anyway).
 */
export interface ProjectCache {
  byToken(token: string): Promise<Project | null>;
  invalidate(): void;
}

const NEGATIVE_TTL_MS = 5_000;
/** How long an authenticated key or a project lookup is trusted without asking the database. */
const TTL_MS = 10_000;
const MAX_ENTRIES = 10_000;

/** Management methods that only read: everything else is a write and clears the caches. */
const READS = new Set<keyof ManagementStore>([
  'isEmpty',
  'findUserByEmail',
  'findUserById',
  'listUsers',
  'authenticateKey',
  'listPersonalApiKeys',
  'getOrganization',
  'listOrganizations',
  'listMembers',
  'listProjects',
  'getProject',
  'findProjectByToken',
  'listAllProjects',
]);

class Expiring<V> {
  private entries = new Map<string, { value: V; until: number }>();
  /**
   * Fetches under way, shared by every miss for the same key meanwhile: after a write clears
   * the cache under capture load, 64 requests in flight would otherwise ask DuckDB 64 times.
   */
  private inFlight = new Map<string, Promise<V>>();
  /** Bumped by `clear`: an answer fetched before a write is not remembered after it. */
  private generation = 0;

  /** The remembered answer for `key`, else `fetch`'s, remembered for `ttlMs(answer)` (0: not at all). */
  through(key: string, fetch: () => Promise<V>, ttlMs: (value: V) => number): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && Date.now() < hit.until) return Promise.resolve(hit.value);
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const generation = this.generation;
    const promise = fetch().then(
      (value) => {
        if (generation !== this.generation) return value;
        this.inFlight.delete(key);
        const ttl = ttlMs(value);
        if (ttl > 0) {
          if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
          this.entries.set(key, { value, until: Date.now() + ttl });
        }
        return value;
      },
      (error: unknown) => {
        if (generation === this.generation) this.inFlight.delete(key);
        throw error;
      },
    );
    this.inFlight.set(key, promise);
    return promise;
  }

  clear(): void {
    this.entries.clear();
    // A fetch begun before the write may read what it changed: later misses fetch anew.
    this.inFlight.clear();
    this.generation++;
  }
}

export function createProjectCache(management: ManagementStore): { cache: ProjectCache; management: ManagementStore } {
  const tokens = new Expiring<Project | null>();
  const principals = new Expiring<Principal | null>();
  const projects = new Expiring<Project | null>();
  const clear = () => {
    tokens.clear();
    principals.clear();
    projects.clear();
  };

  const cache: ProjectCache = {
    // A known token stays until a write clears it; an unknown one is remembered briefly.
    byToken: (token) => tokens.through(token, () => management.findProjectByToken(token), (p) => (p ? Number.POSITIVE_INFINITY : NEGATIVE_TTL_MS)),
    invalidate: clear,
  };

  const wrapped = { ...management } as Record<string, unknown>;
  for (const [name, fn] of Object.entries(management) as Array<[keyof ManagementStore, (...args: unknown[]) => Promise<unknown>]>) {
    if (READS.has(name) || typeof fn !== 'function') continue;
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await fn(...args);
      } finally {
        clear();
      }
    };
  }
  const reads: Pick<ManagementStore, 'authenticateKey' | 'getProject'> = {
    // The key's last use is recorded when the database is asked: at most once per TTL per key.
    authenticateKey: (secret) => principals.through(secret, () => management.authenticateKey(secret), (p) => (p ? TTL_MS : 0)),
    getProject: (id, organizationIds) =>
      projects.through(`${id}\u0000${[...organizationIds].sort().join('\u0000')}`, () => management.getProject(id, organizationIds), () => TTL_MS),
  };
  return { cache, management: { ...(wrapped as unknown as ManagementStore), ...reads } };
}
