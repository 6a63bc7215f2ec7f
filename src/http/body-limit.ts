import { Elysia } from 'elysia';
import { AppError } from '../errors';
import { corsHeaders, errorResponse } from './error-handler';

/**
 * Every route refuses a declared body over the cap before reading a byte of it, with the error
 * body (Bun's own limit, set far higher as a last backstop, would answer an empty 413). Chunked
 * bodies of the public endpoints are cut off while streaming by `readBodyCapped`.
 */
export const bodyLimit = (maxBytes: number) =>
  new Elysia({ name: 'body-limit' }).onRequest(({ request }) => {
    const declared = request.headers.get('content-length');
    if (declared !== null && Number(declared) > maxBytes) {
      return errorResponse(new AppError('payload_too_large', `Request body is larger than the limit of ${maxBytes} bytes.`), corsHeaders(request));
    }
  });

/** Bun's own cap: only reached by chunked bodies on routes that parse the whole body. */
export const HARD_BODY_LIMIT_BYTES = 1024 * 1024 * 1024;
