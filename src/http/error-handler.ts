import { Elysia, mapValueError } from 'elysia';
import { AppError, ERROR_KINDS, isAppError, type ErrorKind } from '../errors';
import type { Logger } from '../logger';

/** The one mapping from any failure to the `{type, code, detail, attr}` body. */
export function errorBody(kind: ErrorKind, detail: string, attr: string | null = null) {
  return { type: ERROR_KINDS[kind].type, code: kind, detail, attr };
}

export function errorResponse(error: AppError, headers: Record<string, string> = {}): Response {
  const h: Record<string, string> = { 'content-type': 'application/json', ...headers };
  if (error.retryAfter !== undefined) h['retry-after'] = String(Math.max(1, Math.ceil(error.retryAfter)));
  return new Response(JSON.stringify(errorBody(error.kind, error.detail, error.attr)), { status: error.status, headers: h });
}

interface ValidationIssue {
  path?: string;
  message?: string;
  summary?: string;
  schema?: { error?: string };
  /** A union's: the issues of each of its branches. */
  errors?: Array<Iterable<ValidationIssue>>;
}

/** Elysia/TypeBox validation errors → the first offending field as `attr`, as DRF does. */
function fromValidation(error: { all?: ValidationIssue[]; message?: string }): AppError {
  const first = reported(error.all?.[0]);
  const path = (first?.path ?? '').replace(/^\//, '').replace(/\//g, '__');
  const detail = first?.schema?.error ?? first?.summary ?? first?.message ?? 'Invalid input.';
  return new AppError('invalid_input', detail, path || null);
}

/**
 * For a union (a body of one of several kinds), the first issue of the branch the value was
 * meant for: one whose `kind` matched, failing least. "Should be one of: 'object', 'object'" would
 * name neither the kind nor the field.
 */
function reported(issue: ValidationIssue | undefined, depth = 0): ValidationIssue | undefined {
  if (!issue?.errors?.length || depth > 8) return issue;
  const branches = issue.errors.map((it) => [...it]).filter((b) => b.length > 0);
  const kindMatched = branches.filter((b) => !b.some((i) => /\/kind$/.test(i.path ?? '')));
  const best = (kindMatched.length ? kindMatched : branches).sort((a, b) => a.length - b.length)[0]?.[0];
  return best ? reported((mapValueError(best as never) as ValidationIssue | undefined) ?? best, depth + 1) : issue;
}

export const errorHandler = (logger: Logger) =>
  new Elysia({ name: 'error-handler' }).onError({ as: 'global' }, ({ code, error, request, set }) => {
    const response = answer(logger, code, error, request, set.status);
    // Kept in step with the answer, so the request log and metrics see it (a 404 of no route left it at 200).
    set.status = response.status;
    return response;
  });

function answer(logger: Logger, code: unknown, error: unknown, request: Request, status: unknown): Response {
  const cors = corsHeaders(request);
  if (isAppError(error)) return errorResponse(error, cors);
  switch (code) {
    case 'VALIDATION':
      return errorResponse(fromValidation(error as never), cors);
    case 'PARSE':
      return errorResponse(new AppError('invalid_payload', 'Malformed request body.'), cors);
    case 'NOT_FOUND':
      return errorResponse(new AppError('not_found', 'Not found.'), cors);
    default: {
      // Never leak the cause (SQL, paths, stack) to the client; keep it in the log.
      const kept = typeof status === 'number' && status >= 400 && status < 500 ? status : 500;
      if (kept >= 500) logger.error('unhandled error', { method: request.method, url: new URL(request.url).pathname, error });
      return errorResponse(new AppError('error', 'A server error occurred.'), cors);
    }
  }
}

/**
 * The public endpoints' CORS: browsers post from any site with the project key, so the Origin is
 * echoed with credentials allowed, as PostHog does. Never for the private API (`/api/…`): its
 * answers carry only what `privateApiCors` grants the operator's origins.
 */
export function corsHeaders(request: Request): Record<string, string> {
  const origin = request.headers.get('origin');
  if (!origin || isPrivateApi(request.url)) return {};
  return {
    'access-control-allow-origin': origin,
    'access-control-allow-credentials': 'true',
    vary: 'Origin',
  };
}

/** `/api/…`: the private API (personal keys), whatever the host or query. */
export function isPrivateApi(url: string): boolean {
  const start = url.indexOf('/', url.indexOf('//') + 2);
  return start >= 0 && url.startsWith('/api/', start);
}
