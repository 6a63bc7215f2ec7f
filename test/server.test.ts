import { afterAll, describe, expect, test } from 'bun:test';
import { existsSync } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { TEST_KEYS, newDataDir, runCliProcess, startServer, type ServerProcess } from './helpers/server-process';
import { eventually } from './helpers/cluster';

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const auth = { authorization: `Bearer ${TEST_KEYS.personal}` };

describe('the server process', () => {
  test('first start creates and prints the account once, with the BOOTSTRAP_* values; restarts keep it', async () => {
    const dir = await newDataDir();
    dirs.push(dir);
    let server: ServerProcess = await startServer({}, dir);
    const printed = JSON.parse(/\{[\s\S]*?\}/.exec(server.output())![0]);
    expect(printed).toEqual({
      organization_id: expect.any(String),
      organization_name: 'Default organization',
      project_id: 1,
      project_api_key: TEST_KEYS.project,
      email: TEST_KEYS.email,
      user_id: 1,
      personal_api_key_id: expect.any(String),
      personal_api_key: TEST_KEYS.personal,
    });
    const health = await fetch(`${server.url}/_health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const me: any = await (await fetch(`${server.url}/api/users/@me/`, { headers: auth })).json();
    expect(me.team.api_token).toBe(TEST_KEYS.project);
    expect(await server.stop('SIGTERM')).toBe(0);

    server = await startServer({}, dir);
    expect(server.output()).not.toContain('First start');
    const projects: any = await (await fetch(`${server.url}/api/projects/`, { headers: auth })).json();
    expect(projects.count).toBe(1);
    expect(await server.stop('SIGINT')).toBe(0);
  });

  test('$ip comes from the socket when no X-Forwarded-For says otherwise, and from the header when one does', async () => {
    const dir = await newDataDir();
    dirs.push(dir);
    const server = await startServer({}, dir);
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    // One without a query string, one with (the handler parses the URL only then).
    expect((await post('/e/', { api_key: TEST_KEYS.project, event: 'direct', distinct_id: 'ip-1' })).status).toBe(200);
    expect((await post('/e/?ver=1.0', { api_key: TEST_KEYS.project, event: 'proxied', distinct_id: 'ip-2' }, { 'x-forwarded-for': '203.0.113.7, 10.0.0.1' })).status).toBe(200);
    // A query waits only a short bound for just-acknowledged events: under a loaded machine they may load later.
    const selected = async (): Promise<any> =>
      (await fetch(`${server.url}/api/projects/1/events/?select=${encodeURIComponent(JSON.stringify(['event', 'properties.$ip']))}&orderBy=${encodeURIComponent(JSON.stringify(['event']))}`, { headers: auth })).json();
    const list = await eventually(selected, (l) => l.results?.length === 2, 20_000);
    expect(list.results).toEqual([
      ['direct', '127.0.0.1'],
      ['proxied', '203.0.113.7'],
    ]);
    expect(await server.stop('SIGTERM')).toBe(0);
  });

  test('events acknowledged just before SIGTERM are processed at the stop (their rows made in the parser thread): exit 0, and the next start lists them', async () => {
    const dir = await newDataDir();
    dirs.push(dir);
    let server = await startServer({}, dir);
    const posted = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${server.url}/capture/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: TEST_KEYS.project, event: 'last-moment', distinct_id: `late-${i}` }) }),
      ),
    );
    expect(posted.map((r) => r.status)).toEqual(posted.map(() => 200));
    expect(await server.stop('SIGTERM')).toBe(0);
    server = await startServer({}, dir);
    const list: any = await (await fetch(`${server.url}/api/projects/1/events/?event=last-moment&limit=100`, { headers: auth })).json();
    expect(list.results.map((e: any) => e.distinct_id).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `late-${i}`).sort());
    expect(await server.stop('SIGTERM')).toBe(0);
  });

  test('SIGTERM lets in-flight requests finish, then closes the database cleanly', async () => {
    const server = await startServer();
    dirs.push(server.dataDir);
    // Requests the server had not accepted yet may be refused; every one it accepted is answered whole.
    let firstAnswered!: () => void;
    const first = new Promise<void>((r) => (firstAnswered = r));
    const inflight = Array.from({ length: 40 }, () =>
      fetch(`${server.url}/api/users/@me/`, { headers: auth }).then(
        async (r) => {
          firstAnswered();
          return { status: r.status, email: ((await r.json()) as any).email };
        },
        () => null,
      ),
    );
    await first;
    const code = await server.stop('SIGTERM');
    const answers = await Promise.all(inflight);
    expect(code).toBe(0);
    for (const a of answers) if (a) expect(a).toEqual({ status: 200, email: TEST_KEYS.email });
    expect(answers.some((a) => a !== null)).toBe(true);
    // The database was released: the CLI can open it at once.
    const listed = await runCliProcess(['list-keys', '--email', TEST_KEYS.email, '--json'], server.dataDir);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toHaveLength(1);
  });

  test('a bad configuration is refused with every bad key listed', async () => {
    const proc = Bun.spawn([process.execPath, 'src/index.ts'], {
      cwd: `${import.meta.dir}/..`,
      env: { ...process.env, PORT: 'x', LOG_LEVEL: 'loud', DATA_DIR: '/tmp/never-created-analytics' },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const [stderr, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited]);
    expect(code).toBe(78);
    expect(stderr).toBe(
      'Invalid configuration: PORT: expected an integer from 0 to 65535; got "x"\n' +
        'Invalid configuration: LOG_LEVEL: expected one of debug, info, warn, error, silent; got "loud"\n',
    );
  });
});

describe('the operator CLI', () => {
  test('create-user, list-users, create-key, list-keys, revoke-key work while the server runs, through its control socket', async () => {
    const server = await startServer();
    dirs.push(server.dataDir);
    // Owner-only: no access for group or others (made so under a umask, never chmod-ed after).
    expect((await stat(join(server.dataDir, 'control.sock'))).mode & 0o077).toBe(0);
    const made = await runCliProcess(
      ['create-user', '--email', 'ops@example.com', '--organization-name', 'Ops', '--personal-api-key', 'phx_opsKey123456789', '--json'],
      server.dataDir,
    );
    expect(made.code).toBe(0);
    const info = JSON.parse(made.stdout);
    expect(info).toEqual({
      organization_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      organization_name: 'Ops',
      project_id: 2,
      project_api_key: expect.stringMatching(/^phc_/),
      email: 'ops@example.com',
      user_id: 2,
      personal_api_key_id: expect.any(String),
      personal_api_key: 'phx_opsKey123456789',
    });
    // The running server knows the new user at once: the command ran in it.
    const ok = await fetch(`${server.url}/api/projects/`, { headers: { authorization: 'Bearer phx_opsKey123456789' } });
    expect(((await ok.json()) as any).results.map((p: { id: number }) => p.id)).toEqual([2]);

    const users = await runCliProcess(['list-users', '--json'], server.dataDir);
    expect(users.code).toBe(0);
    expect(JSON.parse(users.stdout)).toEqual([
      { id: 1, email: TEST_KEYS.email, first_name: '', date_joined: expect.any(String), organizations: ['Default organization'], active_keys: 1 },
      { id: 2, email: 'ops@example.com', first_name: '', date_joined: expect.any(String), organizations: ['Ops'], active_keys: 1 },
    ]);
    const second = await runCliProcess(['create-key', '--email', 'ops@example.com', '--json'], server.dataDir);
    const key2 = JSON.parse(second.stdout);
    expect(key2.personal_api_key).toMatch(/^phx_[A-Za-z0-9_-]{43}$/);
    const listed = JSON.parse((await runCliProcess(['list-keys', '--email', 'ops@example.com', '--json'], server.dataDir)).stdout);
    expect(listed.map((k: { id: string }) => k.id).sort()).toEqual([info.personal_api_key_id, key2.id].sort());
    expect(JSON.stringify(listed)).not.toContain('phx_opsKey123456789');
    expect((await fetch(`${server.url}/api/projects/`, { headers: { authorization: `Bearer ${key2.personal_api_key}` } })).status).toBe(200);
    const revoked = await runCliProcess(['revoke-key', '--id', key2.id], server.dataDir);
    expect(revoked).toEqual({ code: 0, stdout: `revoked ${key2.id}\n`, stderr: '' });
    expect((await fetch(`${server.url}/api/projects/`, { headers: { authorization: `Bearer ${key2.personal_api_key}` } })).status).toBe(401);
    // Usage errors come back as they would locally.
    expect(await runCliProcess(['revoke-key', '--id', 'nope'], server.dataDir)).toEqual({ code: 2, stdout: '', stderr: 'no active key with id nope\n' });

    // Without its socket, the CLI says why it cannot go on.
    await rm(join(server.dataDir, 'control.sock'));
    const locked = await runCliProcess(['list-keys', '--email', TEST_KEYS.email], server.dataDir);
    expect(locked.code).toBe(75);
    expect(locked.stderr).toContain('The server is running on this data directory');
    await server.stop();

    // Stopped, the CLI opens the data itself; a socket left behind (a crash) is not in the way.
    await Bun.write(join(server.dataDir, 'control.sock'), '');
    const offline = JSON.parse((await runCliProcess(['list-users', '--json'], server.dataDir)).stdout);
    expect(offline.map((u: { email: string }) => u.email)).toEqual([TEST_KEYS.email, 'ops@example.com']);
  });

  test('a backup into a directory that is not empty is refused with exit 2, through the socket and with the server stopped alike', async () => {
    const server = await startServer();
    dirs.push(server.dataDir);
    const refused = { code: 2, stdout: '', stderr: `${server.dataDir} is not empty: a backup goes into a new or empty directory.\n` };
    try {
      expect(await runCliProcess(['backup', '--to', server.dataDir], server.dataDir)).toEqual(refused);
    } finally {
      await server.stop();
    }
    expect(await runCliProcess(['backup', '--to', server.dataDir], server.dataDir)).toEqual(refused);
  }, 30_000);

  test('a relative DATA_DIR whose absolute path is too long for a unix socket gets no socket, though the relative one would bind', async () => {
    const parent = join(await newDataDir(), 'p'.repeat(90));
    dirs.push(join(parent, '..'));
    await mkdir(parent);
    const server = await startServer({}, 'data', undefined, parent);
    try {
      expect((await fetch(`${server.url}/_health`)).status).toBe(200);
      expect(existsSync(join(parent, 'data', 'analytics.duckdb'))).toBe(true);
      expect(existsSync(join(parent, 'data', 'control.sock'))).toBe(false);
      // Any CLI, wherever it runs, connects to the absolute path: it says the server holds the data.
      const cli = await runCliProcess(['list-users'], 'data', parent);
      expect(cli.code).toBe(75);
    } finally {
      await server.stop();
    }
  }, 30_000);

  test.each([
    [['create-user', '--organization-name', 'X'], '--email is required'],
    [['create-user', '--email', 'bad', '--organization-name', 'X'], 'is not an e-mail address'],
    [['frobnicate'], 'Unknown command: frobnicate'],
    [['revoke-key', '--id', 'nope'], 'no active key with id nope'],
  ])('bad usage %j is refused with a clear message', async (args, message) => {
    const dir = await newDataDir();
    dirs.push(dir);
    const res = await runCliProcess(args, dir);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(message);
  });
});

describe('OpenAPI', () => {
  test('documents every route from its schemas and renders with local assets only', async () => {
    const server = await startServer();
    dirs.push(server.dataDir);
    const spec: any = await (await fetch(`${server.url}/swagger/json`)).json();
    expect(Object.keys(spec.paths)).toEqual(
      expect.arrayContaining(['/_health', '/api/projects/', '/api/projects/{project_id}/', '/api/users/@me/', '/api/user/']),
    );
    const patch = spec.paths['/api/projects/{project_id}/'].patch;
    expect(Object.keys(patch.requestBody.content['application/json'].schema.properties)).toContain('timezone');
    expect(Object.keys(patch.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '404']));
    const page = await (await fetch(`${server.url}/swagger`)).text();
    const refs = [...page.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThan(2);
    for (const ref of refs) {
      expect(ref.startsWith('/')).toBe(true);
      const res = await fetch(server.url + ref);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    await server.stop();
  });
});
