import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Elysia } from 'elysia';
import { CLIENT_CLOSED, errorHandler } from '../../src/http/error-handler';
import { createLogger } from '../../src/logger';
import { NOT_FOUND, createTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('errors', () => {
  test.each(['/nope', '/api/nothing/here/', '/api/projects/1/unknown/'])('an unknown route is a 404 in the error shape: %s', async (path) => {
    const res = await t.json('GET', path);
    expect(res.status).toBe(404);
    expect(res.body).toEqual(NOT_FOUND);
  });

  test('malformed JSON is a 400 in the error shape', async () => {
    const res = await t.json('PATCH', `/api/projects/${t.account.project.id}/`, { body: '{"name": ' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ type: 'validation_error', code: 'invalid_payload', detail: 'Malformed request body.', attr: null });
  });

  test('a request whose client left mid-body is answered 499 and logged as such, not as a server error; an abort of our own is still one', async () => {
    const lines: string[] = [];
    const app = new Elysia()
      .use(errorHandler(createLogger('info', (l) => lines.push(l))))
      .post('/read', ({ request }) => request.bytes().then(() => {
        throw new DOMException('The connection was closed.', 'AbortError');
      }));
    const client = new AbortController();
    const request = new Request('http://x.test/read', { method: 'POST', body: 'x', signal: client.signal });
    client.abort();
    const res = await app.handle(request);
    expect(res.status).toBe(CLIENT_CLOSED);
    expect(await res.text()).toBe('');
    expect(lines.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ level: 'info', msg: 'client closed the connection before its answer', method: 'POST', url: '/read' })]);
    // The same error with the client still there: ours, a 500 logged as an error.
    lines.length = 0;
    const kept = await app.handle(new Request('http://x.test/read', { method: 'POST', body: 'x' }));
    expect(kept.status).toBe(500);
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['unhandled error']);
  });

  test('an unexpected error is logged with its cause and answered 500 with a generic detail', async () => {
    const lines: string[] = [];
    const app = new Elysia()
      .use(errorHandler(createLogger('error', (l) => lines.push(l))))
      .get('/boom', () => {
        throw new Error('SELECT * FROM secret_table WHERE path = /var/lib/x');
      });
    const res = await app.handle(new Request('http://x.test/boom'));
    expect(res.status).toBe(500);
    const body = await res.text();
    expect(JSON.parse(body)).toEqual({ type: 'server_error', code: 'error', detail: 'A server error occurred.', attr: null });
    expect(body).not.toContain('secret_table');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({ level: 'error', msg: 'unhandled error', url: '/boom', error: { message: expect.stringContaining('secret_table') } });
  });
});
