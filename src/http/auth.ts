import { Elysia } from 'elysia';
import { AppError, methodNotAllowed } from '../errors';
import type { Deps } from '../deps';
import type { Principal, Project } from '../storage';

const SOURCES = ['Authorization header', 'body', 'query string'] as const;

/** PostHog's order: the Authorization header, then the body field, then the query parameter. */
function findPersonalKey(headers: Record<string, string | undefined>, body: unknown, query: Record<string, unknown>) {
  const header = headers.authorization;
  if (header) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match) return { key: match[1], source: SOURCES[0] };
  }
  if (body && typeof body === 'object' && typeof (body as Record<string, unknown>).personal_api_key === 'string') {
    return { key: (body as Record<string, string>).personal_api_key, source: SOURCES[1] };
  }
  if (typeof query.personal_api_key === 'string') return { key: query.personal_api_key, source: SOURCES[2] };
  return null;
}

export async function authenticate(deps: Deps, headers: Record<string, string | undefined>, body: unknown, query: Record<string, unknown>) {
  const found = findPersonalKey(headers, body, query);
  if (!found) throw new AppError('not_authenticated', 'Authentication credentials were not provided.');
  const principal = await deps.storage.management.authenticateKey(found.key);
  if (!principal) throw new AppError('authentication_failed', `Personal API key found in request ${found.source} is invalid.`);
  return principal;
}

/** `{ auth: true }` on a route resolves `principal` or answers 401. */
export const authPlugin = (deps: Deps) =>
  new Elysia({ name: 'auth' }).macro({
    auth: {
      // Schemas strip undeclared fields before `resolve` runs, so the body's key is read here first.
      transform(ctx) {
        const body = ctx.body as Record<string, unknown> | undefined;
        if (body && typeof body === 'object' && typeof body.personal_api_key === 'string') {
          (ctx as unknown as { bodyKey: unknown }).bodyKey = { personal_api_key: body.personal_api_key };
        }
      },
      async resolve(ctx) {
        const query = Object.fromEntries(new URL(ctx.request.url).searchParams);
        const bodyKey = (ctx as unknown as { bodyKey?: unknown }).bodyKey;
        return { principal: await authenticate(deps, ctx.headers, bodyKey, query) };
      },
    },
  });

export const organizationIds = (principal: Principal) => [...principal.memberships.keys()];

/** A project of the caller's organizations, by id or `@current`; anything else is a 404. */
export async function resolveProject(deps: Deps, principal: Principal, idParam: string): Promise<Project> {
  const id = idParam === '@current' ? principal.user.currentProjectId : /^\d{1,9}$/.test(idParam) ? Number(idParam) : null;
  const project = id === null ? null : await deps.storage.management.getProject(id, organizationIds(principal));
  if (!project) throw new AppError('not_found', 'Not found.');
  return project;
}

/** An organization the caller belongs to, by id or `@current`. */
export async function resolveOrganization(deps: Deps, principal: Principal, idParam: string) {
  const id = idParam === '@current' ? principal.user.currentOrganizationId : idParam;
  const level = id ? principal.memberships.get(id) : undefined;
  const organization = id && level !== undefined ? await deps.storage.management.getOrganization(id) : null;
  if (!organization) throw new AppError('not_found', 'Not found.');
  return { organization, level: level! };
}

/**
 * A project route that refuses its method (PostHog's soft deletes, read-only resources): after
 * authentication and the project check, as DRF orders it, a 405 for the request's method.
 */
export const refuseMethod =
  (deps: Deps) =>
  async ({ principal, params, request }: { principal: Principal; params: { project_id: string }; request: Request }): Promise<never> => {
    await resolveProject(deps, principal, params.project_id);
    throw methodNotAllowed(request.method);
  };
