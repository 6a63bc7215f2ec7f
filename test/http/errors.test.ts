import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Elysia } from 'elysia';
import { errorHandler } from '../../src/http/error-handler';
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
