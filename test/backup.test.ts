import { afterAll, describe, expect, test } from 'bun:test';
import { readdir, rm } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { hotValuesOf } from '../src/core/events/columns';
import { uuidv7 } from '../src/ids';
import { withPipeline } from '../src/pipeline';
import { openStorage } from '../src/storage';
import { newLoadState, runBatchClients } from './helpers/ingest-load';
import { TEST_KEYS, newDataDir, runCliProcess, startServer, type ServerProcess } from './helpers/server-process';

/**
 * Backup of a running server while ingestion goes on, restore into an empty DATA_DIR, and a
 * server started on it: every event acknowledged before the backup began, the persons, the
 * flags and the keys are there.
 */
const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function api(server: ServerProcess, method: string, path: string, body?: unknown, key = TEST_KEYS.personal) {
  const response = await fetch(server.url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: response.status, body: (await response.json()) as any };
}

async function storedUuids(server: ServerProcess): Promise<Set<string>> {
  const select = encodeURIComponent(JSON.stringify(['uuid']));
  const r = await api(server, 'GET', `/api/projects/1/events/?select=${select}&limit=2000000&after=2020-01-01T00:00:00Z`);
  expect(r.status).toBe(200);
  return new Set((r.body.results as string[][]).map(([uuid]) => uuid));
}

/** Every file under `dir`, relative to it, sorted; none when it does not exist. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name))).sort();
}

const DAY = 86_400_000;
const storedRow = (i: number, timestamp: number) => {
  const properties = { i };
  return {
    uuid: uuidv7(timestamp),
    teamId: 1,
    event: 'stored',
    distinctId: `d${i % 5}`,
    personId: null,
    properties: JSON.stringify(properties),
    timestamp,
    createdAt: timestamp,
    elementsChain: '',
    hot: hotValuesOf(properties),
  };
};

describe('backup and restore', () => {
  test('a backup of a running server under ingestion restores to the same events, persons, flags and keys', async () => {
    const server = await startServer();
    const backupDir = join(await newDataDir(), 'backup');
    const restoredDir = await newDataDir();
    dirs.push(server.dataDir, join(backupDir, '..'), restoredDir);

    const flag = await api(server, 'POST', '/api/projects/1/feature_flags/', { key: 'beta', name: 'Beta', filters: { groups: [{ properties: [], rollout_percentage: 100 }] } });
    expect(flag.status).toBe(201);
    const key = await api(server, 'POST', '/api/personal_api_keys/', { label: 'ops' });
    expect(key.status).toBe(201);

    // One load big enough to go straight to Parquet (the rest lands in the hot table): the backup carries both.
    const big = Array.from({ length: 6000 }, (_, i) => ({ event: 'bulk', distinct_id: `bulk-${i % 50}`, uuid: uuidv7(), properties: { i } }));
    const bulk = await fetch(`${server.url}/batch/`, { method: 'POST', body: JSON.stringify({ api_key: TEST_KEYS.project, batch: big }) });
    expect(bulk.status).toBe(200);

    const state = newLoadState();
    for (const e of big) state.acked.add(e.uuid);
    let stop = false;
    const load = runBatchClients(state, { url: server.url, apiKey: TEST_KEYS.project, clients: 2, batchSize: 20, maxSeconds: 60, maxRequestsPerClient: 400, shouldStop: () => stop });
    while (state.ok < 20) await Bun.sleep(20);
    const ackedBefore = new Set(state.acked);
    const identified = [...state.identities];
    const okBefore = state.ok;

    const backup = await runCliProcess(['backup', '--to', backupDir, '--json'], server.dataDir);
    expect(backup.stderr).toBe('');
    expect(backup.code).toBe(0);
    const summary = JSON.parse(backup.stdout);
    expect(summary).toEqual({ to: backupDir, files: expect.any(Number), bytes: expect.any(Number) });
    expect(summary.files).toBeGreaterThan(0);
    expect(state.ok).toBeGreaterThan(okBefore); // ingestion went on meanwhile
    stop = true;
    await load;
    const original = await storedUuids(server);
    const originalFlags = (await api(server, 'GET', '/api/projects/1/feature_flags/')).body.results;
    expect(await server.stop()).toBe(0);

    // Into a non-empty DATA_DIR: refused.
    const refused = await runCliProcess(['restore', '--from', backupDir], server.dataDir);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('is not empty');
    const restoredRun = await runCliProcess(['restore', '--from', backupDir], restoredDir);
    expect(restoredRun.stderr).toBe('');
    expect(restoredRun.code).toBe(0);
    expect(await readdir(restoredDir)).toContain('analytics.duckdb');

    const restored = await startServer({}, restoredDir);
    try {
      const uuids = await storedUuids(restored);
      expect([...ackedBefore].filter((u) => !uuids.has(u))).toEqual([]);
      expect([...uuids].filter((u) => !original.has(u))).toEqual([]);
      // Persons: an anonymous id merged before the backup shows the identified person.
      const who = identified[0];
      const events = await api(restored, 'GET', `/api/projects/1/events/?distinct_id=${who.anon}&after=2020-01-01T00:00:00Z`);
      expect(events.body.results.length).toBeGreaterThan(0);
      expect(events.body.results[0].person).toMatchObject({ properties: { email: who.email } });
      expect((await api(restored, 'GET', '/api/projects/1/feature_flags/')).body.results).toEqual(originalFlags);
      // Both keys work; the secret of the one made over HTTP was never stored, only its hash.
      expect((await api(restored, 'GET', '/api/users/@me/', undefined, key.body.value)).status).toBe(200);
      expect((await api(restored, 'GET', '/api/users/@me/')).status).toBe(200);
      // Ingestion continues on the restored data.
      const more = await fetch(`${restored.url}/batch/`, { method: 'POST', body: JSON.stringify({ api_key: TEST_KEYS.project, batch: [{ event: 'after-restore', distinct_id: 'x' }] }) });
      expect(more.status).toBe(200);
      // A list waits a bounded time for rows just acknowledged (500 ms): a restarted server's first
      // batch (its persons loaded first) may take longer on a busy machine, so the list is asked again.
      let after = await api(restored, 'GET', '/api/projects/1/events/?event=after-restore');
      for (let tries = 0; after.body.results.length === 0 && tries < 40; tries++) {
        await Bun.sleep(250);
        after = await api(restored, 'GET', '/api/projects/1/events/?event=after-restore');
      }
      expect(after.body.results).toHaveLength(1);
    } finally {
      await restored.stop();
    }
  }, 120_000);

  test('with a relative DATA_DIR (the default ./data) the backup holds the Parquet files, the person copies and the dead letters', async () => {
    const parent = await newDataDir();
    dirs.push(parent);
    const dataDir = join(parent, 'data');
    // Yesterday's events in Parquet, with a person copy of that settled day...
    const storage = await openStorage(withPipeline({ dataDir }));
    await storage.events.append(Array.from({ length: 30 }, (_, i) => storedRow(i, Date.now() - DAY)));
    await storage.events.compact();
    expect(await storage.events.buildPersonCopies()).toBe(1);
    await storage.close();
    // ...and a dead letter: acknowledged rows that a store whose loads fail could not store.
    const broken = await openStorage(withPipeline({
      dataDir,
      eventStore: { maxFlushAttempts: 1, flushRetryMs: 10, hooks: { beforeLoad() { throw new Error('disk on fire'); } } },
    }));
    await broken.events.append([storedRow(99, Date.now())]);
    await broken.events.flush().catch(() => undefined);
    const deadline = Date.now() + 10_000;
    while ((await broken.events.listDeadLetters()).length === 0 && Date.now() < deadline) await Bun.sleep(50);
    await broken.close().catch(() => undefined);

    const parts = ['events/parquet', 'events/by-person', 'events/dead-letters'];
    const source = await Promise.all(parts.map((p) => filesUnder(join(dataDir, p))));
    for (const files of source) expect(files.length).toBeGreaterThan(0);
    const backupDir = join(parent, 'backup');
    const backup = await runCliProcess(['backup', '--to', backupDir, '--json'], './data', parent);
    expect(backup.stderr).toBe('');
    expect(backup.code).toBe(0);
    expect(JSON.parse(backup.stdout)).toMatchObject({ files: source[0]!.length + source[1]!.length });
    // The same files at the same places as in DATA_DIR.
    expect(await Promise.all(parts.map((p) => filesUnder(join(backupDir, p))))).toEqual(source);
  }, 60_000);
});
