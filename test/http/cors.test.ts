import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { loadConfig } from '../../src/config';
import { BASE, createTestApp, errorOf, type TestApp } from '../helpers/test-app';

/** CORS: the public endpoints answer any origin; the private API only the operator's. */
let open: TestApp;
let configured: TestApp;
beforeAll(async () => {
  open = await createTestApp();
  configured = await createTestApp({ API_CORS_ORIGINS: 'https://admin.example, http://localhost:3000' });
});
afterAll(async () => {
  await open.close();
  await configured.close();
});

const send = async (t: TestApp, method: string, path: string, origin: string | null, key: string | null = t.account.personalApiKey.value) => {
  const headers: Record<string, string> = {};
  if (origin !== null) headers.origin = origin;
  if (method === 'OPTIONS') Object.assign(headers, { 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' });
  if (key && method !== 'OPTIONS') headers.authorization = `Bearer ${key}`;
  const res = await t.app.handle(new Request(BASE + path, { method, headers }));
  const text = await res.text();
  const cors = Object.fromEntries([...res.headers].filter(([k]) => k.startsWith('access-control-') || k === 'vary'));
  return { status: res.status, body: text ? JSON.parse(text) : null, cors };
};

const REFUSED = { status: 403, body: errorOf('permission_denied', 'authentication_error', 'This origin may not call the private API from a browser (API_CORS_ORIGINS).'), cors: { vary: 'Origin' } };

describe('private API: no origin is granted by default, and never null', () => {
  test.each(['https://evil.example', 'null', 'http://localhost:3000'])('a preflight from %s is refused without CORS headers', async (origin) => {
    expect(await send(open, 'OPTIONS', '/api/projects/', origin)).toEqual(REFUSED);
    expect(await send(open, 'OPTIONS', '/api/projects/1/events/', origin)).toEqual(REFUSED);
  });

  test('answers and errors carry no Access-Control-Allow-Origin nor credentials', async () => {
    const ok = await send(open, 'GET', '/api/users/@me/', 'https://evil.example');
    expect({ status: ok.status, cors: ok.cors }).toEqual({ status: 200, cors: { vary: 'Origin' } });
    const denied = await send(open, 'GET', '/api/projects/', 'null', null);
    expect({ status: denied.status, cors: denied.cors }).toEqual({ status: 401, cors: { vary: 'Origin' } });
    const missing = await send(open, 'GET', '/api/nope/', 'https://evil.example');
    expect({ status: missing.status, cors: missing.cors }).toEqual({ status: 404, cors: { vary: 'Origin' } });
  });
});

describe('private API: the origins of API_CORS_ORIGINS', () => {
  test('a preflight from a listed origin is granted: the origin, the methods, Authorization; no credentials', async () => {
    expect(await send(configured, 'OPTIONS', '/api/projects/', 'https://admin.example')).toEqual({
      status: 204,
      body: null,
      cors: {
        'access-control-allow-origin': 'https://admin.example',
        'access-control-allow-methods': 'GET, POST, PUT, PATCH, DELETE, OPTIONS',
        'access-control-allow-headers': 'Authorization, Content-Type',
        'access-control-max-age': '600',
        vary: 'Origin',
      },
    });
    expect((await send(configured, 'OPTIONS', '/api/projects/', 'http://localhost:3000')).status).toBe(204);
  });

  test('answers (errors included) carry the listed origin; others and null get nothing', async () => {
    const granted = { 'access-control-allow-origin': 'https://admin.example', vary: 'Origin' };
    const ok = await send(configured, 'GET', '/api/users/@me/', 'https://admin.example');
    expect({ status: ok.status, cors: ok.cors }).toEqual({ status: 200, cors: granted });
    const denied = await send(configured, 'GET', '/api/projects/', 'https://admin.example', null);
    expect({ status: denied.status, cors: denied.cors }).toEqual({ status: 401, cors: granted });
    for (const origin of ['https://evil.example', 'null', 'https://admin.example.evil.example', 'http://admin.example']) {
      expect(await send(configured, 'OPTIONS', '/api/projects/', origin)).toEqual(REFUSED);
      expect((await send(configured, 'GET', '/api/users/@me/', origin)).cors).toEqual({ vary: 'Origin' });
    }
  });

  test('the setting takes only origins: null, *, paths and bare hosts are refused at start', () => {
    for (const bad of ['null', '*', 'https://a.example/', 'https://a.example/path', 'a.example', 'https://a.example,null']) {
      expect(() => loadConfig({ API_CORS_ORIGINS: bad })).toThrow('API_CORS_ORIGINS');
    }
    expect(loadConfig({ API_CORS_ORIGINS: 'https://a.example, http://[::1]:8080' }).API_CORS_ORIGINS).toBe('https://a.example, http://[::1]:8080');
  });
});

describe('public endpoints keep answering any origin', () => {
  test.each([
    ['/batch/', 'https://any-site.example'],
    ['/e/', 'null'],
    ['/decide/', 'https://any-site.example'],
    ['/flags/', 'https://any-site.example'],
  ])('a preflight to %s from %s', async (path, origin) => {
    const res = await send(open, 'OPTIONS', path, origin);
    expect(res).toEqual({
      status: 200,
      body: { status: 1 },
      cors: {
        'access-control-allow-origin': origin,
        'access-control-allow-credentials': 'true',
        'access-control-allow-methods': 'GET, POST, OPTIONS',
        'access-control-allow-headers': 'X-Requested-With,Content-Type',
        'access-control-max-age': '86400',
        vary: 'Origin',
      },
    });
  });

  test('a capture from any origin is answered with that origin', async () => {
    const res = await open.app.handle(
      new Request(`${BASE}/e/`, { method: 'POST', headers: { origin: 'https://shop.example', 'content-type': 'application/json' }, body: JSON.stringify({ api_key: open.account.project.apiToken, event: 'e', distinct_id: 'u' }) }),
    );
    expect({ status: res.status, origin: res.headers.get('access-control-allow-origin'), credentials: res.headers.get('access-control-allow-credentials') }).toEqual({
      status: 200,
      origin: 'https://shop.example',
      credentials: 'true',
    });
  });
});
