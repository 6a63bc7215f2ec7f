import { Elysia } from 'elysia';
import type { Deps } from '../../deps';
import { authPlugin } from '../../http/auth';
import { authErrors } from '../../http/schemas';
import { LegacyUserResponse, MeResponse } from './model';
import { currentUser, legacyUser } from './service';

/** Deprecated since 5 April 2021 (the spec's Versioning section). */
const DEPRECATION = { deprecation: 'Mon, 05 Apr 2021 00:00:00 GMT', link: '</api/users/@me/>; rel="successor-version"' };

export const usersModule = (deps: Deps) =>
  new Elysia({ name: 'users', detail: { tags: ['users'] } })
    .use(authPlugin(deps))
    .get('/api/users/@me/', ({ principal }) => currentUser(deps, principal), {
      auth: true,
      response: { 200: MeResponse, ...authErrors },
      detail: { summary: 'The current user, organization and project' },
    })
    .get(
      '/api/user/',
      async ({ principal, set }) => {
        Object.assign(set.headers, DEPRECATION);
        return legacyUser(deps, principal);
      },
      { auth: true, response: { 200: LegacyUserResponse, ...authErrors }, detail: { summary: 'Deprecated: use /api/users/@me/', deprecated: true } },
    );
