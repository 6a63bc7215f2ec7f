import { Elysia, t } from 'elysia';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { authPlugin } from '../../http/auth';
import { ErrorBody, authErrors } from '../../http/schemas';
import { PersonalApiKeyCreateBody, PersonalApiKeyParams, PersonalApiKeyResponse } from './model';
import { checkKeyCount, checkScopes, toKeyResponse } from './service';

/** The caller's own personal API keys: listed without secrets, created (the secret shown once), revoked. */
export const personalApiKeysModule = (deps: Deps) => {
  const { management } = deps.storage;
  const activeKeys = async (userId: number) => (await management.listPersonalApiKeys(userId)).filter((k) => k.revokedAt === null);
  return new Elysia({ name: 'personal-api-keys', prefix: '/api/personal_api_keys', detail: { tags: ['personal api keys'] } })
    .use(authPlugin(deps))
    .get(
      '/',
      async ({ principal }) => (await activeKeys(principal.user.id)).reverse().map((k) => toKeyResponse(k)),
      { auth: true, response: { 200: t.Array(PersonalApiKeyResponse), ...authErrors }, detail: { summary: "List the caller's personal API keys (newest first, never the secrets)" } },
    )
    .post(
      '/',
      async ({ principal, body, set }) => {
        checkScopes(body.scopes);
        checkKeyCount((await activeKeys(principal.user.id)).length);
        const { value, ...key } = await management.createPersonalApiKey(principal.user.id, body.label);
        set.status = 201;
        return toKeyResponse(key, value);
      },
      {
        auth: true,
        body: PersonalApiKeyCreateBody,
        response: { 201: PersonalApiKeyResponse, 400: ErrorBody, ...authErrors },
        detail: { summary: 'Create a personal API key; its secret is in `value`, this once' },
      },
    )
    .get(
      '/:id/',
      async ({ principal, params }) => {
        const key = (await activeKeys(principal.user.id)).find((k) => k.id === params.id);
        if (!key) throw new AppError('not_found', 'Not found.');
        return toKeyResponse(key);
      },
      { auth: true, params: PersonalApiKeyParams, response: { 200: PersonalApiKeyResponse, ...authErrors }, detail: { summary: 'Retrieve a personal API key' } },
    )
    .delete(
      '/:id/',
      async ({ principal, params, set }) => {
        if (!(await management.revokePersonalApiKey(params.id, principal.user.id))) throw new AppError('not_found', 'Not found.');
        set.status = 204;
      },
      { auth: true, params: PersonalApiKeyParams, response: { 204: t.Void(), ...authErrors }, detail: { summary: 'Revoke a personal API key (it stops working at once)' } },
    );
};
