import { Elysia, t } from 'elysia';
import { EXPOSITION_CONTENT_TYPE, renderExposition } from '../../core/metrics/exposition';
import type { Deps } from '../../deps';
import { collectMetrics } from './collect';

/**
 * `GET /metrics`: Prometheus text. Served without authentication, as exporters are: it carries
 * counts, sizes, durations and route patterns, no user data. `METRICS=off` removes the route.
 */
export const metricsModule = (deps: Deps) => {
  const app = new Elysia({ name: 'metrics', detail: { tags: ['health'] } });
  if (deps.config.METRICS === 'off') return app;
  return app.get(
    '/metrics',
    async () => new Response(renderExposition(await collectMetrics(deps)), { headers: { 'content-type': EXPOSITION_CONTENT_TYPE } }),
    { response: { 200: t.String({ description: 'The Prometheus text exposition format.' }) }, detail: { summary: 'Prometheus metrics' } },
  );
};
