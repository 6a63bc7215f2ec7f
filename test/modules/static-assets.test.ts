import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { listAssets, staticAssetsModule } from '../../src/modules/static-assets';
import { BASE, createTestApp, NOT_FOUND, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const DIST = join(dirname(require.resolve('posthog-js/package.json')), 'dist');
const ORIGIN = 'https://site.example.com';
const get = (path: string) => t.call('GET', path, { key: null, headers: { origin: ORIGIN } });

describe('posthog-js from /static/', () => {
  test.each([
    ['/static/array.js', 'array.js'],
    ['/static/array.full.js', 'array.full.js'],
    ['/static/surveys.js?v=1.449.2', 'surveys.js'],
    ['/static/1.449.2/lazy-recorder.js', 'lazy-recorder.js'],
  ])('%s serves dist/%s', async (path, file) => {
    const res = await get(path);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/javascript; charset=utf-8');
    expect(res.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(res.headers.get('cache-control')).toBe('public, max-age=3600');
    expect(await res.text()).toBe(await readFile(join(DIST, file), 'utf8'));
  });

  test('source maps are served as JSON', async () => {
    const res = await get('/static/array.js.map');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });

  test.each([
    '/static/nope.js',
    '/static/package.json',
    '/static/array.d.ts',
    '/static/..%2Fpackage.json',
    '/static/..%2F..%2Fpackage.json',
    '/static/%2E%2E/package.json',
    '/static/x/..%2F..%2Fposthog-js%2Fpackage.json',
    '/static/integrity.json',
  ])('%s → 404', async (path) => {
    const res = await t.app.handle(new Request(BASE + path));
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual(NOT_FOUND);
  });
});

describe('the allow-list', () => {
  test('only .js and .js.map files directly in the directory; none without the package', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'static-'));
    try {
      await writeFile(join(dir, 'a.js'), 'a');
      await writeFile(join(dir, 'a.js.map'), '{}');
      await writeFile(join(dir, 'notes.txt'), 'x');
      await mkdir(join(dir, 'sub.js'));
      await writeFile(join(dir, 'sub.js', 'b.js'), 'b');
      expect([...listAssets(dir).keys()].sort()).toEqual(['a.js', 'a.js.map']);
      expect(listAssets(join(dir, 'missing')).size).toBe(0);
      expect(listAssets(null).size).toBe(0);
      const res = await staticAssetsModule(dir).handle(new Request(`${BASE}/static/a.js`));
      expect(await res.text()).toBe('a');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
