import { Elysia, t } from 'elysia';
import type { Deps } from '../../deps';
import { ErrorBody } from '../../http/schemas';

export interface Readiness {
  accepting: boolean;
}

const ReadyBody = t.Object(
  {
    accepting: t.Boolean({ description: 'Whether capture requests are taken now (false: they are answered 503 with Retry-After).' }),
    reason: t.Union([t.Literal('shutting_down'), t.Literal('disk_low'), t.Literal('backlog'), t.Literal('log_queue'), t.Null()], {
      description: 'Why not: the server stops, the disk is nearly full, or acknowledged events wait to be stored beyond the cap.',
    }),
    backlog: t.Object({
      bytes: t.Number({ description: 'Logged bytes not yet stored, and bytes waiting for the log.' }),
      events: t.Number({ description: 'Acknowledged events not yet stored.' }),
      oldest_age_seconds: t.Number({ description: 'How long the oldest of them has waited (0: none waits).' }),
    }),
  },
  { description: 'Whether ingestion accepts events, and what waits to be stored.' },
);

/**
 * `GET /_health`: liveness, answered from memory (200, or 503 once the server drains for
 * shutdown). `GET /_ready`: readiness for a load balancer, 503 while ingestion refuses events
 * (backpressure, a nearly full disk, shutdown), with the backlog behind that answer.
 */
export const healthModule = (deps: Deps, readiness: Readiness) =>
  new Elysia({ name: 'health', detail: { tags: ['health'] } })
    .get(
      '/_health',
      ({ set }) => {
        if (readiness.accepting) return { status: 'ok' as const };
        set.status = 503;
        return { type: 'server_error', code: 'unavailable', detail: 'The server is shutting down.', attr: null };
      },
      { response: { 200: t.Object({ status: t.Literal('ok') }), 503: ErrorBody }, detail: { summary: 'Liveness' } },
    )
    .get(
      '/_ready',
      ({ set }) => {
        const stats = deps.storage.events.stats();
        const refused = stats.backpressure === 'closed' ? 'shutting_down' : stats.backpressure;
        const reason = readiness.accepting ? refused : 'shutting_down';
        if (reason !== null) set.status = 503;
        return {
          accepting: reason === null,
          reason,
          backlog: { bytes: stats.pendingBytes, events: stats.bufferedRows, oldest_age_seconds: stats.oldestPendingMs / 1000 },
        };
      },
      { response: { 200: ReadyBody, 503: ReadyBody }, detail: { summary: 'Readiness: whether ingestion accepts events, with the backlog' } },
    );
