import { swagger } from '@elysiajs/swagger';
import { Elysia } from 'elysia';
import { dirname, join } from 'node:path';

/** Swagger UI's files come from the installed swagger-ui-dist package: the page works offline. */
const uiDir = dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS = new Set(['swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'swagger-ui.css', 'favicon-32x32.png']);

const page = (version: string) => `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <title>Analytics API ${version}</title>
  <link rel="stylesheet" href="/swagger/assets/swagger-ui.css" />
  <link rel="icon" href="/swagger/assets/favicon-32x32.png" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/swagger/assets/swagger-ui-bundle.js"></script>
  <script src="/swagger/assets/swagger-ui-standalone-preset.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: '/swagger/json', dom_id: '#swagger-ui', presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });
  </script>
</body>
</html>`;

export const docsModule = (version: string) =>
  new Elysia({ name: 'docs' })
    .use(
      swagger({
        // The plugin's own page loads its UI from a CDN; ours (below) serves it locally instead.
        path: '/swagger/cdn',
        specPath: '/swagger/json',
        exclude: ['/swagger', '/swagger/cdn', '/swagger/assets/:file'],
        documentation: {
          info: {
            title: 'Analytics API',
            version,
            description: 'A PostHog-compatible product-analytics backend: ingestion, feature flags, events, and management.',
          },
          components: {
            securitySchemes: { personalApiKey: { type: 'http', scheme: 'bearer', description: 'A personal API key (phx_…)' } },
          },
          security: [{ personalApiKey: [] }],
        },
      }),
    )
    .get('/swagger', () => new Response(page(version), { headers: { 'content-type': 'text/html; charset=utf-8' } }), { detail: { hide: true } })
    .get(
      '/swagger/assets/:file',
      ({ params, set }) => {
        if (!ASSETS.has(params.file)) {
          set.status = 404;
          return { type: 'invalid_request', code: 'not_found', detail: 'Not found.', attr: null };
        }
        return Bun.file(join(uiDir, params.file));
      },
      { detail: { hide: true } },
    );
