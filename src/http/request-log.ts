import { Elysia } from 'elysia';
import type { Logger } from '../logger';
import { countRequest, type AppMetrics } from '../metrics';

/**
 * Every answered request counted by route and status, and logged at debug level with its
 * duration, once the response is on its way (Elysia runs this hook in the next turn). Routes are
 * the matched patterns (`/api/projects/:project_id/`), and anything no route matched is one
 * `unmatched` label, so a scanner's random paths cannot grow the metrics.
 */
export const requestLog = (logger: Logger, metrics: AppMetrics) => {
  const started = new WeakMap<Request, number>();
  return new Elysia({ name: 'request-log' })
    .onRequest(({ request }) => {
      started.set(request, performance.now());
    })
    .onAfterResponse({ as: 'global' }, ({ request, route, set, responseValue, path }) => {
      const status = responseValue instanceof Response ? responseValue.status : typeof set.status === 'number' ? set.status : 200;
      countRequest(metrics, request.method, route || 'unmatched', status);
      const begun = started.get(request);
      logger.debug('request', { method: request.method, path, route: route || null, status, ms: begun === undefined ? null : Math.round((performance.now() - begun) * 10) / 10 });
    });
};
