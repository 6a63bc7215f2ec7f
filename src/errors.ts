/**
 * The one error type of the service. Every failure a client can see is an AppError whose `kind`
 * is also the `code` of the error body; `http/error-handler.ts` is the one place that maps a kind
 * to its status and `type`. (The field is not called `code`: Elysia reads `error.code` first.)
 */
export const ERROR_KINDS = {
  invalid_input: { status: 400, type: 'validation_error' },
  required: { status: 400, type: 'validation_error' },
  invalid_choice: { status: 400, type: 'validation_error' },
  unique: { status: 400, type: 'validation_error' },
  invalid_project: { status: 400, type: 'validation_error' },
  invalid_payload: { status: 400, type: 'validation_error' },
  not_authenticated: { status: 401, type: 'authentication_error' },
  missing_api_key: { status: 401, type: 'authentication_error' },
  authentication_failed: { status: 401, type: 'authentication_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  invalid_personal_api_key: { status: 401, type: 'authentication_error' },
  permission_denied: { status: 403, type: 'authentication_error' },
  not_found: { status: 404, type: 'invalid_request' },
  method_not_allowed: { status: 405, type: 'invalid_request' },
  payload_too_large: { status: 413, type: 'invalid_request' },
  query_timeout: { status: 504, type: 'server_error' },
  unavailable: { status: 503, type: 'server_error' },
  error: { status: 500, type: 'server_error' },
  /** nginx's status for a request whose client left before its answer: nobody reads it, but the request log and metrics tell such requests apart. */
  client_closed: { status: 499, type: 'invalid_request' },
} as const;

export type ErrorKind = keyof typeof ERROR_KINDS;

export interface AppErrorOptions {
  /** Seconds a client should wait before retrying (sent as `Retry-After`). */
  retryAfter?: number;
  cause?: unknown;
}

export class AppError extends Error {
  readonly kind: ErrorKind;
  readonly detail: string;
  readonly attr: string | null;
  readonly retryAfter?: number;

  constructor(kind: ErrorKind, detail: string, attr: string | null = null, options: AppErrorOptions = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.kind = kind;
    this.detail = detail;
    this.attr = attr;
    this.retryAfter = options.retryAfter;
  }

  get status(): number {
    return ERROR_KINDS[this.kind].status;
  }
}

export const isAppError = (value: unknown): value is AppError => value instanceof AppError;

/** DRF's answer to a method a resource refuses (soft-deleted resources refuse DELETE). */
export const methodNotAllowed = (method: string) => new AppError('method_not_allowed', `Method "${method}" not allowed.`);

/** The client closed its connection while its request was read or waited to be: not a failure of this server. */
export const clientClosed = () => new AppError('client_closed', 'The client closed the connection before its request was answered.');
