import { Elysia, t } from 'elysia';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { AppError } from '../../errors';
import { corsHeaders } from '../../http/cors';
import { ErrorBody } from '../../http/schemas';

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'application/javascript; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/** The installed posthog-js `dist/` directory, or null when the package is not installed. */
function findDist(): string | null {
  try {
    return join(dirname(require.resolve('posthog-js/package.json')), 'dist');
  } catch {
    return null;
  }
}

/**
 * A fixed allow-list read once at start: only files that exist directly in `dist/` and end in
 * `.js` or `.js.map` can ever be served, so no request path reaches the file system.
 */
export function listAssets(dir: string | null): ReadonlyMap<string, string> {
  if (!dir) return new Map();
  try {
    return new Map(
      readdirSync(dir, { withFileTypes: true })
        .filter((entry) => entry.isFile() && /^[A-Za-z0-9._-]+\.js(\.map)?$/.test(entry.name))
        .map((entry) => [entry.name, join(dir, entry.name)]),
    );
  } catch {
    return new Map();
  }
}

// Both routes name their first segment alike: the router needs one parameter name per position.
const FileParams = t.Object({ name: t.String() });
const VersionedParams = t.Object({ name: t.String(), file: t.String() });

/**
 * posthog-js served from this host, for sites whose snippet points `api_host` here:
 * `/static/array.js` and the extensions array.js loads lazily, as `/static/<name>.js` or
 * `/static/<version>/<name>.js` (the version is ignored: the installed release answers).
 */
export const staticAssetsModule = (dir: string | null = findDist()) => {
  const assets = listAssets(dir);
  const serve = (request: Request, name: string) => {
    const path = assets.get(name);
    if (!path) throw new AppError('not_found', 'Not found.');
    const type = CONTENT_TYPES[name.endsWith('.map') ? '.map' : '.js'];
    return new Response(Bun.file(path), {
      headers: { 'content-type': type, 'cache-control': 'public, max-age=3600', ...corsHeaders(request) },
    });
  };
  const responses = { 200: t.String(), 404: ErrorBody };
  return new Elysia({ name: 'static-assets', detail: { tags: ['static'] } })
    .get('/static/:name', ({ request, params }) => serve(request, params.name), {
      params: FileParams,
      response: responses,
      detail: { summary: 'A posthog-js bundle (array.js, array.full.js, lazy extensions)' },
    })
    .get('/static/:name/:file', ({ request, params }) => serve(request, params.file), {
      params: VersionedParams,
      response: responses,
      detail: { summary: 'A posthog-js extension by version (the installed release is served)' },
    });
};
