import { join } from 'node:path';
import { openStorage } from '../src/storage';
import type { PersonEvent } from '../src/core/ingest/person-updates';
import { randomKit, seeded } from './_events';
import type { BenchRow, Benchmark } from './types';

/**
 * What persons cost the server's memory. The person store holds every person of a project it has
 * loaded (loaded whole on first use, after a restart too), so its memory grows with the persons,
 * not with the load. N persons are made the way posthog-js makes them, through `processEvent` (what
 * processing calls for every event): an anonymous visitor's first `$pageview` with its `$initial_*`
 * properties in `$set_once`, and for a third of them an `$identify` that merges in an email and a
 * name. Measured: the JavaScript heap they take and the process's resident growth as they are
 * made, against their own bytes as JSON (the least holding them could take); the time of an event
 * and of the bulk flush; then restarts, each a fresh process over the same files
 * (`_persons-load.ts`), the store's own load of the project alternated with a baseline reading
 * the same rows whole (as the load did before it read them a chunk at a time): the load's time,
 * the heap the persons then hold and the process's resident peak during the load.
 */
const SEED = 20261127;

/** The events of person `i`, made as they are asked for (held all at once, they would weigh on the heap measured). */
function personEvents(): (i: number) => PersonEvent[] {
  const k = randomKit(seeded(SEED));
  const browsers = ['Chrome', 'Safari', 'Firefox', 'Microsoft Edge'];
  const oses = ['Mac OS X', 'Windows', 'iOS', 'Android', 'Linux'];
  const now = Date.now();
  return (i) => {
    const anon = k.uuid7(now - i);
    const path = `/${k.pick(['pricing', 'docs', 'blog', 'signup', ''])}${i % 50 ? '' : `/${k.hex(6)}`}`;
    const first: PersonEvent = {
      uuid: k.uuid7(now - i),
      event: '$pageview',
      distinctId: anon,
      timestamp: now - i,
      properties: {},
      set: {},
      setOnce: {
        $initial_browser: k.pick(browsers),
        $initial_browser_version: 100 + (i % 30),
        $initial_os: k.pick(oses),
        $initial_device_type: k.pick(['Desktop', 'Mobile']),
        $initial_current_url: `https://example.com${path}`,
        $initial_pathname: path,
        $initial_referrer: k.pick(['$direct', 'https://www.google.com/']),
        $initial_referring_domain: k.pick(['$direct', 'www.google.com']),
        $initial_utm_source: null,
        $initial_geoip_country_code: k.pick(['US', 'DE', 'GB', 'FR', 'IN']),
      },
      unset: [],
      anonDistinctId: null,
      alias: null,
      processPerson: true,
    };
    if (i % 3 !== 0) return [first];
    const email = `user${i}@example.com`;
    return [first, { ...first, uuid: k.uuid7(now - i + 1), event: '$identify', distinctId: email, setOnce: {}, set: { email, name: `User ${i}` }, anonDistinctId: anon }];
  };
}

const heap = () => {
  Bun.gc(true);
  return process.memoryUsage().heapUsed;
};
const MB = 1024 * 1024;
const round = (x: number, digits = 0) => Number(x.toFixed(digits));

/** Make `n` persons through `processEvent`, flushing in bulk as the store's loads do. */
async function makePersons(dataDir: string, n: number, metaStore?: string) {
  const eventsOf = personEvents();
  const storage = await openStorage({ dataDir, ...(metaStore ? { metaStore } : {}) });
  try {
    // With PostgreSQL a flush writes nothing for a project that does not exist there.
    if (metaStore) await storage.management.createAccount({ email: 'persons-bench@example.com', organizationName: 'Persons bench' });
    await storage.persons.ensureLoaded(1);
    const heap0 = heap();
    const rss0 = process.memoryUsage().rss;
    let count = 0;
    let rawBytes = 0;
    let processMs = 0;
    let flushMs = 0;
    for (let i = 0; i < n; i++) {
      const events = eventsOf(i);
      for (const e of events) rawBytes += JSON.stringify(e.setOnce).length + JSON.stringify(e.set).length + e.distinctId.length;
      rawBytes += 36; // the person's uuid
      const started = performance.now();
      for (const e of events) storage.persons.processEvent(1, e);
      processMs += performance.now() - started;
      count += events.length;
      if (i % 20_000 === 19_999 || i === n - 1) {
        const flushStarted = performance.now();
        await storage.persons.flush();
        flushMs += performance.now() - flushStarted;
      }
    }
    return { count, rawBytes, processMs, flushMs, heap: heap() - heap0, rss: process.memoryUsage().rss - rss0 };
  } finally {
    await storage.close();
  }
}

interface Restart {
  loadMs: number;
  heap: number;
  /** The process's resident peak during the load over its size before. */
  peak: number;
}

/** A restart, in a fresh process (`_persons-load.ts`): the project's persons loaded on first use (`chunks`), or read whole as the baseline (`whole`). */
async function loadPersons(dataDir: string, n: number, mode: 'chunks' | 'whole', metaStore?: string): Promise<Restart> {
  const args = [dataDir, mode, `user${3 * Math.floor((n - 1) / 3)}@example.com`, ...(metaStore ? [metaStore] : [])];
  const child = Bun.spawn([process.execPath, join(import.meta.dir, '_persons-load.ts'), ...args], { stdout: 'pipe', stderr: 'inherit' });
  const out = await new Response(child.stdout).text();
  if ((await child.exited) !== 0) throw new Error(`the restart's process failed: ${out}`);
  const result = JSON.parse(out.trim().split('\n').pop()!) as Restart & { found: boolean };
  if (!result.found) throw new Error('a merged person was not loaded');
  return result;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[], scale = 1) => `${round(Math.min(...xs) / scale)}–${round(Math.max(...xs) / scale)}`;

const bench: Benchmark = async ({ tmpDir, quick, options, log }) => {
  const n = quick ? 20_000 : 300_000;
  const made = await makePersons(tmpDir, n);
  const held = made.heap;
  log(`${n.toLocaleString()} persons (${made.count.toLocaleString()} events): heap +${(held / MB).toFixed(0)} MB, RSS +${(made.rss / MB).toFixed(0)} MB`);
  // Restarts, the store's load and the baseline alternated, each in a fresh process.
  const runs: Record<'chunks' | 'whole', Restart[]> = { chunks: [], whole: [] };
  for (let round = 0; round < Math.max(1, options.rounds); round++) {
    for (const mode of round % 2 === 0 ? (['whole', 'chunks'] as const) : (['chunks', 'whole'] as const)) {
      const r = await loadPersons(tmpDir, n, mode);
      runs[mode].push(r);
      log(`restart ${round + 1} (${mode}): ${Math.round(r.loadMs)} ms, heap +${(r.heap / MB).toFixed(0)} MB, peak RSS +${(r.peak / MB).toFixed(0)} MB`);
    }
  }
  const restart = (mode: 'chunks' | 'whole', label: string): BenchRow => {
    const rs = runs[mode];
    const heapHeld = median(rs.map((r) => r.heap));
    return {
      case: label,
      'MB': round(heapHeld / MB, 1),
      'bytes a person': round(heapHeld / n),
      'ratio to baseline': round(heapHeld / made.rawBytes, 2),
      'load ms': round(median(rs.map((r) => r.loadMs))),
      'peak RSS growth MB': round(median(rs.map((r) => r.peak)) / MB, 1),
      'peak RSS growth MB (min–max)': spread(rs.map((r) => r.peak), MB),
    };
  };
  const { rawBytes, count } = made;
  const rows: BenchRow[] = [
    { case: `baseline: the persons' own bytes as JSON (${n.toLocaleString()} persons)`, 'MB': round(rawBytes / MB, 1), 'bytes a person': round(rawBytes / n) },
    { case: 'made: the JavaScript heap the person store grew by', 'MB': round(held / MB, 1), 'bytes a person': round(held / n), 'ratio to baseline': round(held / rawBytes, 2) },
    { case: "made: the process's RSS growth (the heap, DuckDB's tables, indexes and caches)", 'MB': round(made.rss / MB, 1), 'bytes a person': round(made.rss / n), 'ratio to baseline': round(made.rss / rawBytes, 2) },
    restart('chunks', 'restart: the project loaded on first use (a chunk at a time)'),
    restart('whole', 'restart baseline: the same rows read whole, as the load did before'),
    { case: 'processEvent (persons behind each event, in memory)', 'µs an event': round((made.processMs * 1000) / count, 2) },
    { case: 'flush (the changes written to DuckDB in bulk)', 'µs an event': round((made.flushMs * 1000) / count, 2) },
  ];
  const perPerson = (bytes: number) => round(bytes / n);
  const chunkPeak = median(runs.chunks.map((r) => r.peak));
  // PERSONS_META_STORE=postgres: the same persons kept in PostgreSQL (a server of the test
  // helpers', on loopback), each restart a fresh process over the same DATA_DIR: the project read
  // from PostgreSQL a page at a time, and DuckDB's copy of it brought up to date.
  if (process.env.PERSONS_META_STORE === 'postgres') {
    const { createTestDatabase } = await import('../test/helpers/postgres');
    const metaStore = await createTestDatabase();
    const pgDir = join(tmpDir, 'postgres');
    await makePersons(pgDir, n, metaStore);
    const pg: Restart[] = [];
    for (let round = 0; round < Math.max(2, options.rounds + 1); round++) {
      // The first on a DATA_DIR of its own, still empty; the others on the one that made them.
      const r = await loadPersons(round === 0 ? join(tmpDir, 'postgres-fresh') : pgDir, n, 'chunks', metaStore);
      log(`META_STORE restart ${round + 1}: ${Math.round(r.loadMs)} ms, peak RSS +${(r.peak / MB).toFixed(0)} MB`);
      pg.push(r);
    }
    const row = (rs: Restart[], label: string): BenchRow => ({
      case: label,
      'MB': round(median(rs.map((r) => r.heap)) / MB, 1),
      'bytes a person': round(median(rs.map((r) => r.heap)) / n),
      'load ms': round(median(rs.map((r) => r.loadMs))),
      'peak RSS growth MB': round(median(rs.map((r) => r.peak)) / MB, 1),
      'peak RSS growth MB (min–max)': spread(rs.map((r) => r.peak), MB),
    });
    rows.push(
      row(pg.slice(0, 1), 'META_STORE restart on a DATA_DIR without the copy (the whole copy written)'),
      row(pg.slice(1), 'META_STORE restart on its DATA_DIR (the copy synced: what differs written)'),
    );
  }
  return {
    name: 'persons',
    rows,
    notes: [
      `Persons are held in memory per loaded project, outside DUCKDB_MEMORY_LIMIT: ~${perPerson(held)} bytes of heap a person as they are made, ~${perPerson(median(runs.chunks.map((r) => r.heap)))} once loaded after a restart; a restart's load of ${n.toLocaleString()} persons takes ${round(median(runs.chunks.map((r) => r.loadMs)) / 1000, 1)} s (the project's first request waits for it) and raises the process's resident peak by ${round(chunkPeak / MB)} MB (${perPerson(chunkPeak)} bytes a person), against ${round(median(runs.whole.map((r) => r.peak)) / MB)} MB read whole.`,
    ],
  };
};

export default bench;
