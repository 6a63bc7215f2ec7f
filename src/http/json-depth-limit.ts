import { Elysia } from 'elysia';
import { exceedsJsonDepth, MAX_JSON_DEPTH } from '../core/ingest/json-depth';
import { AppError } from '../errors';
import { corsHeaders, errorResponse, isPrivateApi } from './error-handler';

/** No JSON this short can nest past the limit. */
const SHORTEST_TOO_DEEP = 2 * (MAX_JSON_DEPTH + 1);

/**
 * JSON bodies of the private API (`/api/…`; the public endpoints decode their own bodies, with
 * the same limit) are refused with 400 when nested deeper than MAX_JSON_DEPTH, before they are
 * parsed: a value 100,000 levels deep was parsed, then overflowed a later step's stack (storing
 * it) as a 500 a second after. Read from a copy of the body before routing: a parse hook would
 * be global and make Elysia parse the public endpoints' bodies too (their `parse: 'none'` then
 * no longer holds), and private API bodies are small and rare.
 */
export const jsonDepthLimit = () =>
  new Elysia({ name: 'json-depth-limit' }).onRequest(async ({ request }) => {
    // Capture requests (the hot path) leave at the first test, without parsing their URL.
    if (!isPrivateApi(request.url)) return;
    if (request.method === 'GET' || request.method === 'HEAD' || request.body === null) return;
    if (!/^application\/(.+\+)?json/i.test(request.headers.get('content-type') ?? '')) return;
    const declared = request.headers.get('content-length');
    if (declared !== null && Number(declared) < SHORTEST_TOO_DEEP) return;
    if (exceedsJsonDepth(await request.clone().text(), MAX_JSON_DEPTH)) {
      return errorResponse(new AppError('invalid_payload', `Malformed request body: JSON nested deeper than ${MAX_JSON_DEPTH} levels.`), corsHeaders(request));
    }
  });
