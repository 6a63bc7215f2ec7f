import type { ManagementStore, Project } from './management/types';

/**
 * Ingestion and flag checks look a project up by its token on every request; this keeps the
 * answers in memory. Changes made through the store invalidate them at once; an unknown token is
 * remembered briefly, so a client hammering with a bad key does not hammer the database.
 */
export interface ProjectCache {
  byToken(token: string): Promise<Project | null>;
  invalidate(): void;
}

const NEGATIVE_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

export function createProjectCache(management: ManagementStore): { cache: ProjectCache; management: ManagementStore } {
  const entries = new Map<string, { project: Project | null; at: number }>();
  const cache: ProjectCache = {
    async byToken(token) {
      const hit = entries.get(token);
      if (hit && (hit.project || Date.now() - hit.at < NEGATIVE_TTL_MS)) return hit.project;
      const project = await management.findProjectByToken(token);
      if (entries.size >= MAX_ENTRIES) entries.clear();
      entries.set(token, { project, at: Date.now() });
      return project;
    },
    invalidate: () => entries.clear(),
  };
  const invalidating = <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A) => {
      try {
        return await fn(...args);
      } finally {
        entries.clear();
      }
    };
  return {
    cache,
    management: {
      ...management,
      createAccount: invalidating(management.createAccount),
      createProject: invalidating(management.createProject),
      updateProject: invalidating(management.updateProject),
      deleteProject: invalidating(management.deleteProject),
      markIngested: invalidating(management.markIngested),
    },
  };
}
