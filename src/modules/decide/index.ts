import { Elysia, t } from 'elysia';
import { randomUUID } from 'node:crypto';
import { decodePayload } from '../../core/ingest/decode-payload';
import type { Deps } from '../../deps';
import { AppError } from '../../errors';
import { corsHeaders, preflightResponse } from '../../http/cors';
import { readBodyCapped } from '../../http/read-body';
import { ErrorBody } from '../../http/schemas';
import type { Project } from '../../storage';
import { projectForPublicKey } from '../../http/project-key';
import { evaluateRequest, type FlagsOutcome } from './evaluate';
import { planFor } from './flag-plan';
import { DecideResponse, FlagsResponse, PublicErrors, RemoteConfigResponse, TokenParams } from './model';
import { type FlagRequest, readFlagRequest } from './request';
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

const NO_KEY = 'No project API key provided. You can find your project API key in PostHog project settings.';

const MISSING_DISTINCT_ID = 'Decide requires a distinct_id.';

const json = (request: Request, body: unknown) => jsonText(request, JSON.stringify(body));

/**
 * The query string alone, parsed once per distinct string: SDKs send the same few (`v=2`,
 * `v=4&config=true`) on every check. The parsed params are shared, so they are only ever read.
 */
const parsedQueries = new Map<string, URLSearchParams>();
const MAX_QUERIES = 500;
const MAX_CACHED_QUERY = 256;
const NO_QUERY = new URLSearchParams();

const queryOf = (request: Request): URLSearchParams => {
  const url = request.url;
  const at = url.indexOf('?');
  if (at < 0 || at === url.length - 1) return NO_QUERY;
  const text = url.slice(at + 1);
  let query = parsedQueries.get(text);
  if (!query) {
    query = new URLSearchParams(text);
    if (text.length <= MAX_CACHED_QUERY) {
      if (parsedQueries.size >= MAX_QUERIES) parsedQueries.clear();
      parsedQueries.set(text, query);
    }
  }
  return query;
};

/** Without an Origin (server SDKs) every answer has the same headers: one Headers, copied by each Response. */
const JSON_HEADERS = new Headers({ 'content-type': 'application/json' });

const jsonText = (request: Request, text: string) => {
  const cors = request.headers.get('origin') === null ? null : corsHeaders(request);
  return new Response(text, { status: 200, headers: cors ? { 'content-type': 'application/json', ...cors } : JSON_HEADERS });
};

export const decideModule = (deps: Deps) => {
  const max = deps.config.MAX_BODY_BYTES;

  const parseRequest = (request: Request, query: URLSearchParams, body: Uint8Array): FlagRequest => {
    // An empty POST still authenticates by `?token=`, then fails on the missing distinct_id, as in PostHog.
    if (!body.byteLength && !query.has('data')) {
      return readFlagRequest({}, { token: query.get('token') ?? query.get('api_key'), projectId: query.get('project_id'), sentAt: null });
    }
    const headers = request.headers;
    const { payload, hints } = decodePayload({ body, contentType: headers.get('content-type'), contentEncoding: headers.get('content-encoding'), query, maxBytes: max });
    return readFlagRequest(payload, hints);
  };

  /**
   * decode → authenticate → evaluate, shared by `/decide/` and `/flags/`, then `respond`. Written
   * as one async function that awaits only the body and the project lookup when every flag,
   * person and remembered answer is in memory: each extra async step costs the event loop more
   * than the evaluation it would wrap.
   */
  const check = async (request: Request, query: URLSearchParams, respond: (project: Project, outcome: FlagsOutcome) => Response | Promise<Response>) => {
    const req = parseRequest(request, query, await readBodyCapped(request, max));
    const project = await projectForPublicKey(deps, req.token, req.projectId, NO_KEY);
    if (req.distinctId === null && !req.disableFlags) throw new AppError('required', MISSING_DISTINCT_ID, 'distinct_id');
    const outcome = evaluateRequest(deps, project, req);
    return respond(project, outcome instanceof Promise ? await outcome : outcome);
  };

  const hasFlags = (project: Project): boolean | Promise<boolean> => {
    const team = deps.storage.flags.cachedForTeam(project.id);
    if (team) return planFor(team).live.length > 0;
    return deps.storage.flags.forTeam(project.id).then((loaded) => planFor(loaded).live.length > 0);
  };

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
      ({ request }) => {
        const query = queryOf(request);
        const version = parseDecideVersion(query.get('v'));
        return check(request, query, (project, outcome) => jsonText(request, decideBody(project, version, outcome, randomUUID())));
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
      ({ request }) => {
        const query = queryOf(request);
        const { version, config } = parseFlagsQuery(query);
        return check(request, query, (project, outcome) => {
          const respond = (configPart: Record<string, unknown> | null) =>
            jsonText(request, flagsBody(version, outcome, randomUUID(), deps.now().getTime(), configPart));
          if (!config) return respond(null);
          const has = hasFlags(project);
          return typeof has === 'boolean' ? respond(flagsConfig(project, has)) : has.then((loaded) => respond(flagsConfig(project, loaded)));
        });
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
