import { Elysia, t } from 'elysia';
import { ErrorBody } from '../../http/schemas';

export interface Readiness {
  accepting: boolean;
}

/** `GET /_health`: 200 while the server accepts traffic, 503 once it drains for shutdown. */
export const healthModule = (readiness: Readiness) =>
  new Elysia({ name: 'health', detail: { tags: ['health'] } }).get(
    '/_health',
    ({ set }) => {
      if (readiness.accepting) return { status: 'ok' as const };
      set.status = 503;
      return { type: 'server_error', code: 'unavailable', detail: 'The server is shutting down.', attr: null };
    },
    { response: { 200: t.Object({ status: t.Literal('ok') }), 503: ErrorBody }, detail: { summary: 'Liveness and readiness' } },
  );
