import { Elysia } from 'elysia';
import { AppError } from '../errors';
import { errorResponse, isPrivateApi } from './error-handler';

const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';
const ALLOW_HEADERS = 'Authorization, Content-Type';

/**
 * CORS of the private API (`/api/…`): only the origins the operator lists (API_CORS_ORIGINS,
 * none by default) may call it from a browser. A personal key can read and change everything,
 * so echoing any Origin (with credentials, as the public endpoints do) would let every page a
 * user with a key in hand visits use it. `null` (sandboxed frames, files) is never an origin
 * here: no configured value can be it. Credentials are not allowed: the key travels in the
 * Authorization header, which the preflight allows; no cookie authenticates.
 */
export function privateApiCors(setting: string | undefined) {
  const allowed = new Set((setting ?? '').split(',').map((o) => o.trim()).filter(Boolean).map((o) => new URL(o).origin));
  return new Elysia({ name: 'private-api-cors' }).onRequest(({ request, set }) => {
    const origin = request.headers.get('origin');
    if (!isPrivateApi(request.url)) return;
    const granted = origin !== null && allowed.has(origin);
    if (request.method === 'OPTIONS') {
      if (!granted) return errorResponse(new AppError('permission_denied', 'This origin may not call the private API from a browser (API_CORS_ORIGINS).'), { vary: 'Origin' });
      return new Response(null, {
        status: 204,
        headers: {
          'access-control-allow-origin': origin,
          'access-control-allow-methods': ALLOW_METHODS,
          'access-control-allow-headers': ALLOW_HEADERS,
          'access-control-max-age': '600',
          vary: 'Origin',
        },
      });
    }
    set.headers.vary = 'Origin';
    if (granted) set.headers['access-control-allow-origin'] = origin;
  });
}
