import { Elysia, t } from 'elysia';
import { randomUUID } from 'node:crypto';
import { decodePayload } from '../../core/ingest/decode-payload';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { corsHeaders, preflightResponse } from '../../http/cors';
import { readBodyCapped } from '../../http/read-body';
import { ErrorBody } from '../../http/schemas';
import type { Project } from '../../storage';
import { projectForFlags } from './authenticate';
import { evaluateRequest } from './evaluate';
import { planFor } from './flag-plan';
import { DecideResponse, FlagsResponse, PublicErrors, RemoteConfigResponse, TokenParams } from './model';
import { readFlagRequest } from './request';
import {
  decideBaseConfig,
  decideBody,
  flagsBody,
  flagsConfig,
  parseDecideVersion,
  parseFlagsQuery,
  remoteConfig,
  remoteConfigScript,
} from './responses';

const MISSING_DISTINCT_ID = 'Decide requires a distinct_id.';

const json = (request: Request, body: unknown) => jsonText(request, JSON.stringify(body));

/** The query string alone: cheaper than parsing the whole URL on every flag check. */
const queryOf = (request: Request) => {
  const at = request.url.indexOf('?');
  return new URLSearchParams(at < 0 ? '' : request.url.slice(at + 1));
};

const jsonText = (request: Request, text: string) =>
  new Response(text, { status: 200, headers: { 'content-type': 'application/json', ...corsHeaders(request) } });

export const decideModule = (deps: Deps) => {
  const readRequest = async (request: Request, query: URLSearchParams) => {
    const max = deps.config.MAX_BODY_BYTES;
    const body = await readBodyCapped(request, max);
    // An empty POST still authenticates by `?token=`, then fails on the missing distinct_id, as in PostHog.
    if (!body.byteLength && !query.has('data')) {
      return readFlagRequest({}, { token: query.get('token') ?? query.get('api_key'), projectId: query.get('project_id'), sentAt: null });
    }
    const headers = request.headers;
    const { payload, hints } = decodePayload({ body, contentType: headers.get('content-type'), contentEncoding: headers.get('content-encoding'), query, maxBytes: max });
    return readFlagRequest(payload, hints);
  };

  /** decode → authenticate → evaluate, shared by `/decide/` and `/flags/`. */
  const check = async (request: Request, query: URLSearchParams) => {
    const req = await readRequest(request, query);
    const project = await projectForFlags(deps, req.token, req.projectId);
    if (req.distinctId === null && !req.disableFlags) throw new AppError('required', MISSING_DISTINCT_ID, 'distinct_id');
    return { project, outcome: await evaluateRequest(deps, project, req) };
  };

  const hasFlags = async (project: Project) => planFor(await deps.storage.flags.forTeam(project.id)).live.length > 0;

  const projectOr404 = async (token: string) => {
    const project = await deps.storage.projectByToken(token);
    if (!project) throw new AppError('not_found', 'Not found.');
    return project;
  };

  const decideDetail = {
    summary: 'Feature flags and client config for one user (posthog-js ≤ 1.2xx, posthog-node 3)',
    description:
      'Body `{token | api_key, distinct_id, groups?, person_properties?, group_properties?, $anon_distinct_id?, flag_keys_to_evaluate?}`; ' +
      'JSON, gzip or base64 `data=`. `v` selects the response version (1 when absent).',
  };
  const flagsDetail = {
    summary: 'Feature flags for one user (current posthog-js and posthog-node)',
    description: '`?v=2` (or no `v`): the detailed `flags` map; `v=1`: the legacy `featureFlags` map. `config=true` adds the remote config.',
  };

  return new Elysia({ name: 'decide', detail: { tags: ['flags'] } })
    .post(
      '/decide/',
      async ({ request }) => {
        const query = queryOf(request);
        const { project, outcome } = await check(request, query);
        const version = parseDecideVersion(query.get('v'));
        return jsonText(request, decideBody(project, version, outcome, randomUUID()));
      },
      { parse: 'none', response: { 200: DecideResponse, ...PublicErrors }, detail: decideDetail },
    )
    .get('/decide/', ({ request }) => json(request, { ...decideBaseConfig(null), featureFlags: {} }), {
      response: { 200: DecideResponse },
      detail: { summary: 'The default client config (no flags)' },
    })
    .options('/decide/', ({ request }) => preflightResponse(request), { detail: { hide: true } })
    .post(
      '/flags/',
      async ({ request }) => {
        const query = queryOf(request);
        const { version, config } = parseFlagsQuery(query);
        const { project, outcome } = await check(request, query);
        const configPart = config ? flagsConfig(project, await hasFlags(project)) : null;
        return jsonText(request, flagsBody(version, outcome, randomUUID(), deps.now().getTime(), configPart));
      },
      { parse: 'none', response: { 200: FlagsResponse, ...PublicErrors }, detail: flagsDetail },
    )
    .get(
      '/flags/',
      ({ request }) => {
        const { version } = parseFlagsQuery(queryOf(request));
        const empty = { results: [], flags: new Map(), errors: false };
        return jsonText(request, flagsBody(version, empty, randomUUID(), deps.now().getTime(), flagsConfig(null, false)));
      },
      { response: { 200: FlagsResponse }, detail: { summary: 'No flags: the minimal client config' } },
    )
    .head('/flags/', ({ request }) => new Response(null, { status: 200, headers: { 'content-type': 'application/json', ...corsHeaders(request) } }), {
      detail: { hide: true },
    })
    .options('/flags/', ({ request }) => preflightResponse(request), { detail: { hide: true } })
    .get(
      '/array/:token/config',
      async ({ params, request }) => {
        const project = await projectOr404(params.token);
        return json(request, remoteConfig(project, await hasFlags(project)));
      },
      { params: TokenParams, response: { 200: RemoteConfigResponse, 404: ErrorBody }, detail: { summary: 'Remote config for posthog-js (JSON)' } },
    )
    .get(
      '/array/:token/config.js',
      async ({ params, request }) => {
        const project = await projectOr404(params.token);
        const script = remoteConfigScript(project, await hasFlags(project));
        return new Response(script, { headers: { 'content-type': 'application/javascript', ...corsHeaders(request) } });
      },
      { params: TokenParams, response: { 200: t.String(), 404: ErrorBody }, detail: { summary: 'Remote config for posthog-js (script)' } },
    );
};
