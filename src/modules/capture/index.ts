import { Elysia, t, type AnyElysia } from 'elysia';
import type { Deps } from '../../deps';
import { corsHeaders, preflightResponse } from '../../http/cors';
import { readBodyCapped } from '../../http/read-body';
import { ErrorBody } from '../../http/schemas';
import { BodyBudget, BodyRoom, SMALL_BODY_BYTES } from './body-budget';
import { clientIp } from './client-ip';
import { decodedSize, decodedSizeHint, ingest } from './ingest';

/** Every path real SDKs post events to; each also answers with a trailing slash, GET and OPTIONS. */
export const CAPTURE_PATHS = ['/capture', '/batch', '/e', '/i/v0/e', '/track', '/engage'] as const;

const OK_BODY = '{"status":1}';
const JSON_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'application/json' };
/** Read only (decoding never changes the query it is given). */
const NO_QUERY = new URLSearchParams();

const CaptureResponses = {
  200: t.Object({ status: t.Literal(1) }, { description: 'Received (exactly 200: posthog-js retries other 2xx).' }),
  204: t.Void({ description: 'Received, for a sendBeacon request (beacon=1), as PostHog answers it.' }),
  400: ErrorBody,
  401: ErrorBody,
  413: ErrorBody,
  503: ErrorBody,
};

/**
 * Capture bodies in hand at once (body-budget.ts) for each parser thread (`INGEST_PARSE_THREADS`;
 * the main thread when there is none), never under one body of the largest size: about a second
 * of a parser thread's work, so none is idle for want of bodies.
 */
const BODIES_IN_HAND_BYTES_PER_THREAD = 32 * 1024 * 1024;
export const bodiesInHandBytes = (config: Pick<Deps['config'], 'MAX_BODY_BYTES' | 'INGEST_PARSE_THREADS'>): number =>
  Math.max(config.MAX_BODY_BYTES, BODIES_IN_HAND_BYTES_PER_THREAD * Math.max(1, config.INGEST_PARSE_THREADS));
/** How long a request waits for room before it is answered 503 (a client's retry then spreads the load). */
const BODY_WAIT_MS = 5_000;

export const captureModule = (deps: Deps) => {
  const budget = deps.captureBodies
    ? new BodyBudget(deps.captureBodies.bytes, deps.captureBodies.waitMs)
    : new BodyBudget(bodiesInHandBytes(deps.config), BODY_WAIT_MS);
  deps.metrics.captureBodies = budget;
  const handle = async (request: Request, server: { requestIP(r: Request): { address: string } | null } | null, path: string) => {
    // Most SDK posts carry no query string: skip parsing the URL then.
    const query = request.url.includes('?') ? new URL(request.url).searchParams : NO_QUERY;
    if (request.method !== 'POST') return answer(request, server, path, query, new Uint8Array(0));
    const max = deps.config.MAX_BODY_BYTES;
    const declared = request.headers.get('content-length');
    const leftOn = () => request.signal;
    // A body of unknown length (chunked) is counted as a small one, then as twice what was read
    // each time its read passes what it holds: counted as the largest from the start, chunked
    // posts were let in one at a time. A body found compressed only by its bytes (gzip, a form's
    // data) is counted at its decoded size before it is decoded.
    const counted = (bytes: number) => decodedSizeHint(bytes, request.headers, query, max);
    const room = new BodyRoom(budget, leftOn);
    await room.growTo(counted(declared === null ? SMALL_BODY_BYTES : Number(declared) || 0));
    const past =
      declared === null
        ? {
            bytes: SMALL_BODY_BYTES,
            reached: async (read: number) => {
              const next = Math.min(2 * read, max);
              await room.growTo(counted(next));
              return next;
            },
          }
        : undefined;
    try {
      const body = await readBodyCapped(request, max, past);
      await room.growTo(decodedSize(body, request.headers, max));
      return await answer(request, server, path, query, body);
    } finally {
      room.release();
    }
  };
  const answer = async (request: Request, server: { requestIP(r: Request): { address: string } | null } | null, path: string, query: URLSearchParams, body: Uint8Array) => {
    const { logged } = await ingest(deps, {
      body,
      contentType: request.headers.get('content-type'),
      contentEncoding: request.headers.get('content-encoding'),
      query,
      ip: clientIp(request.headers, () => server?.requestIP(request)?.address ?? null),
      engage: path === '/engage',
    });
    deps.metrics.eventsAcknowledged += logged;
    // sendBeacon (`beacon=1`) cannot read an answer: PostHog's capture sends 204 without a body.
    if (query.get('beacon') === '1') return new Response(null, { status: 204, headers: request.headers.has('origin') ? corsHeaders(request) : undefined });
    // Server SDKs send no Origin: their answer's headers are one shared object.
    return new Response(OK_BODY, { status: 200, headers: request.headers.has('origin') ? { ...JSON_HEADERS, ...corsHeaders(request) } : JSON_HEADERS });
  };

  let app: AnyElysia = new Elysia({ name: 'capture', detail: { tags: ['capture'] } });
  for (const path of CAPTURE_PATHS) {
    const detail = {
      summary: `Ingest events (${path}/)`,
      description:
        'A single event, an array, or `{batch: [...]}`; JSON, gzip (header, `?compression=gzip-js` or magic bytes), lz64, or base64 `data=`. ' +
        'The project key from `api_key`, `token`, `$token` or `properties.token`.',
    };
    app = app
      .post(`${path}/`, ({ request, server }) => handle(request, server, path), { parse: 'none', response: CaptureResponses, detail })
      .get(`${path}/`, ({ request, server }) => handle(request, server, path), { response: CaptureResponses, detail: { ...detail, summary: `Ingest events by GET data= (${path}/)` } })
      .options(`${path}/`, ({ request }) => preflightResponse(request), { detail: { hide: true } });
  }
  return app;
};
