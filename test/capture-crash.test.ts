import { afterAll, expect, test } from 'bun:test';
import { rm } from 'node:fs/promises';
import { eventually } from './helpers/cluster';
import { newLoadState, runBatchClients, type LoadState } from './helpers/ingest-load';
import { newDataDir, startServer, TEST_KEYS, type ServerProcess } from './helpers/server-process';

/**
 * The durability contract over HTTP: a real server child takes concurrent `/batch/` requests
 * (50 events each, client uuids; or 5 each, from more clients: small bodies, prepared on the main
 * thread behind the 200 where large ones are parsed in the ingest thread), is killed with SIGKILL at a random moment, restarted on the
 * same DATA_DIR, and the events API must then show every uuid that was answered 200 exactly once
 * (zero lost, zero duplicated), cumulatively over the cycles. Batches that were not answered 200
 * are sent again with the same uuids after the restart (a client retry: stored at most once).
 * Persons must survive too: the anonymous ids of acknowledged `$identify` merges show the
 * identified person.
 */

const CYCLES = 3;
// Lets one select return every uuid of the test (the default cap is 100,000 rows).
const ENV = { QUERY_MAX_ROWS: '2000000' };

const dataDirs: string[] = [];
let server: ServerProcess | null = null;
afterAll(async () => {
  if (server && server.proc.exitCode === null && server.proc.signalCode === null) await server.stop('SIGKILL');
  for (const dir of dataDirs) await rm(dir, { recursive: true, force: true });
});

async function api(url: string, path: string): Promise<{ status: number; body: any }> {
  const response = await fetch(url + path, { headers: { authorization: `Bearer ${TEST_KEYS.personal}` }, signal: AbortSignal.timeout(30_000) });
  return { status: response.status, body: await response.json() };
}

/** Every stored uuid of project 1 with its number of rows. */
async function storedUuids(url: string): Promise<Map<string, number>> {
  const select = encodeURIComponent(JSON.stringify(['uuid']));
  const r = await api(url, `/api/projects/1/events/?select=${select}&limit=2000000`);
  expect(r.status).toBe(200);
  expect(r.body.hasMore).toBe(false);
  const seen = new Map<string, number>();
  for (const [uuid] of r.body.results as string[][]) seen.set(uuid, (seen.get(uuid) ?? 0) + 1);
  return seen;
}

async function verify(url: string, state: LoadState, cycle: number) {
  const t0 = performance.now();
  const seen = await storedUuids(url);
  const lost = [...state.acked].filter((u) => !seen.has(u));
  const duplicated = [...seen].filter(([, n]) => n > 1);
  const rows = [...seen.values()].reduce((a, b) => a + b, 0);
  console.log(
    `cycle ${cycle}: ${state.acked.size} acknowledged, ${seen.size} distinct stored (${rows} rows, ${seen.size - state.acked.size} stored without an acknowledgement), ` +
      `${lost.length} lost, ${duplicated.length} duplicated; requests ${state.requests} (${state.ok} ok, ${state.failed} not, ${state.retried} retries) ` +
      `statuses ${JSON.stringify(Object.fromEntries(state.statuses))}; verified in ${Math.round(performance.now() - t0)} ms`,
  );
  expect({ cycle, lostCount: lost.length, lost: lost.slice(0, 5) }).toEqual({ cycle, lostCount: 0, lost: [] });
  expect({ cycle, duplicatedCount: duplicated.length, duplicated: duplicated.slice(0, 5) }).toEqual({ cycle, duplicatedCount: 0, duplicated: [] });

  // Persons: the anon id of each acknowledged identify (a sample of them) now belongs to the
  // identified person, whose properties carry the email set by the $identify.
  const sample = state.identities.slice(-8);
  for (const id of sample) {
    const r = await api(url, `/api/projects/1/events/?distinct_id=${encodeURIComponent(id.anon)}&limit=1`);
    expect(r.status).toBe(200);
    expect(r.body.results.length).toBe(1);
    const person = r.body.results[0].person;
    expect({ anon: id.anon, is_identified: person?.is_identified, email: person?.properties?.email }).toEqual({ anon: id.anon, is_identified: true, email: id.email });
    const byUser = await api(url, `/api/projects/1/events/?distinct_id=${encodeURIComponent(id.user)}&limit=1`);
    expect(byUser.body.results[0]?.person?.distinct_ids).toEqual(r.body.results[0].person.distinct_ids);
  }
  return sample.length;
}

test.each([
  [50, 6],
  [5, 16],
])(
  `kill -9 during /batch/ ingestion of %i-event bodies from %i clients, ${CYCLES} cycles: every acknowledged event is stored exactly once, persons survive`,
  async (BATCH, CLIENTS) => {
    const started = performance.now();
    const dataDir = await newDataDir();
    dataDirs.push(dataDir);
    const state = newLoadState();
    server = await startServer(ENV, dataDir);
    let personsChecked = 0;
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      let stop = false;
      const load = runBatchClients(state, {
        url: server.url,
        apiKey: TEST_KEYS.project,
        clients: CLIENTS,
        batchSize: BATCH,
        maxSeconds: 10,
        maxRequestsPerClient: 5_000,
        shouldStop: () => stop,
      });
      const ackedBefore = state.acked.size;
      // A random moment: during appends, group commits, segment seals, loads, checkpoints.
      await Bun.sleep(300 + Math.floor(Math.random() * 1200));
      const killed = server;
      killed.proc.kill('SIGKILL');
      await killed.proc.exited;
      expect(killed.proc.signalCode).toBe('SIGKILL');
      stop = true;
      await load;
      expect(state.acked.size).toBeGreaterThan(ackedBefore); // the cycle did acknowledge something

      server = await startServer(ENV, dataDir);
      personsChecked += await verify(server.url, state, cycle);
    }
    // One more load on the recovered server: the pending batches are retried (same uuids) and
    // the store keeps accepting after three crashes.
    let stop = false;
    const pendingBefore = state.pending.size;
    const tail = runBatchClients(state, {
      url: server.url,
      apiKey: TEST_KEYS.project,
      clients: CLIENTS,
      batchSize: BATCH,
      maxSeconds: 5,
      maxRequestsPerClient: 3,
      shouldStop: () => stop,
    });
    await tail;
    stop = true;
    expect(state.pending.size).toBe(0);
    // Unlike after a restart (recovery loads the log before the server listens), the tail's events
    // were acknowledged just now, and a list waits only a short bound for them: asked until every
    // acknowledged uuid is listed (at most 20 s), then checked as after each restart.
    const url = server.url;
    await eventually(() => storedUuids(url), (seen) => [...state.acked].every((u) => seen.has(u)), 20_000);
    personsChecked += await verify(server.url, state, CYCLES + 1);
    expect(personsChecked).toBeGreaterThan(0);
    expect(state.acked.size).toBeGreaterThan(20 * BATCH);
    expect(state.retried).toBeGreaterThanOrEqual(pendingBefore);
    const code = await server.stop('SIGTERM');
    expect(code).toBe(0);
    console.log(`capture crash test: ${state.acked.size} acknowledged events over ${CYCLES} kill -9 cycles in ${Math.round(performance.now() - started)} ms`);
  },
  90_000,
);
