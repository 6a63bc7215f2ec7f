import { DuckDBInstance } from '@duckdb/node-api';
import { readFileSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { bootstrap } from '../src/bootstrap';
import { hotValuesOf, type StoredEventRow } from '../src/core/events/columns';
import { loadConfig } from '../src/config';
import type { Deps } from '../src/deps';
import { appendWaiting } from './_append';
import { silentLogger } from '../src/logger';
import { createAppMetrics } from '../src/metrics';
import { createEventsService } from '../src/modules/events/service';
import { openStorage, type Storage } from '../src/storage';
import type { SqlParam } from '../src/storage/db';
import { startServer, TEST_KEYS } from '../test/helpers/server-process';
import type { BenchRow, Benchmark } from './types';
import { seeded } from './_events';
import { withPipeline } from '../src/pipeline';
import { missingEngines, startClickHouse } from '../src/cli/cluster/engines';
import { freePort, stopAll } from '../src/cli/cluster/processes';
import { openClickHouse, parseClickHouseUrl, type ClickHouse } from '../src/storage/clickhouse/client';
import { duckdbEventReads } from '../src/storage/events/read/reads';
import { copyEventsInto, inProcessGet, openChdb, openClickHouseApp, type InProcessGet } from './_query-clickhouse';

/**
 * The stored-events API on a realistic project: N generated events (seeded; a month of
 * timestamps ending now, ~22 properties, 10 event names, 50k distinct ids, 5% in a second
 * project) appended through the event store's write path in 10k batches, exactly as ingestion
 * appends them (so the store's own tiering decides what is in its hot table and what in Parquet).
 *
 * Each case is timed three ways in the same run, medians of several runs after warm-ups:
 *  - http: the real server (a child process) on loopback, whole response read;
 *  - direct: the very statements the API ran for that request (recorded), replayed straight on
 *    DuckDB with the same concurrency (count alongside the page), so http/direct is the API's
 *    overhead (HTTP, validation, JSON, persons, elements);
 *  - naive: the one-statement SQL a hand-written query would use (ORDER BY … LIMIT over the
 *    team's whole relation), for scale.
 * The database file is locked by one process at a time: the direct runs happen in this process
 * before the server starts, on the same files.
 * Then the same cases on ClickHouse: over HTTP to a server on a Debian 18.16 server
 * (clickhousePhase), and in process on chDB (chdbPhase) next to the same app over DuckDB (inproc).
 */

const DAY = 86_400_000;
/** Cycles of direct (in this process) then http (the server) over the same files. */
const CYCLES = 2;
/** Each export over HTTP this many times a cycle: one run a cycle left the median to two runs. */
const EXPORT_RUNS = 3;
const SEED = 20240110;

async function readMarker(file: string, total: number): Promise<{ teamId: number; seconds: number } | null> {
  try {
    const m = JSON.parse(await readFile(file, 'utf8')) as { total: number; teamId: number; seconds: number };
    return m.total === total ? m : null;
  } catch {
    return null;
  }
}

function createGenerator(seed: number, total: number, endMs: number, teams: [number, number]) {
  const rand = seeded(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const hex = (n: number) => {
    let out = '';
    for (let i = 0; i < n; i++) out += '0123456789abcdef'[Math.floor(rand() * 16)];
    return out;
  };
  const span = 30 * DAY;
  const step = span / total;
  const start = endMs - span;
  const browsers = ['Chrome', 'Chrome', 'Chrome', 'Safari', 'Safari', 'Firefox', 'Edge', 'Opera'];
  const oses = ['Mac OS X', 'Windows', 'Linux', 'iOS', 'Android'];
  const events = ['$pageview', '$pageview', '$pageview', '$pageview', '$autocapture', '$autocapture', '$pageleave', '$identify', 'clicked_button', 'signed_up', 'purchase', 'invited_user'];
  const paths = ['/', '/pricing', '/docs/getting-started', '/blog/how-we-built-it', '/account/settings', '/checkout'];
  const countries = ['US', 'US', 'DE', 'FR', 'GB', 'IN', 'BR', 'JP', 'NZ'];
  const users = Array.from({ length: 50_000 }, () => `user-${hex(12)}`);
  let i = 0;
  const next = (): StoredEventRow => {
    const timestamp = Math.floor(start + i * step + rand() * step);
    i++;
    const os = pick(oses);
    const browser = pick(browsers);
    const path = pick(paths);
    const distinctId = pick(users);
    const props: Record<string, unknown> = {
      $os: os,
      $browser: browser,
      $browser_version: 100 + Math.floor(rand() * 30),
      $device_type: pick(['Desktop', 'Mobile', 'Tablet']),
      $current_url: `https://app.example.com${path}?ref=${hex(4)}`,
      $host: 'app.example.com',
      $pathname: path,
      $screen_height: pick([768, 900, 1080, 1440]),
      $screen_width: pick([1366, 1440, 1920, 2560]),
      $lib: 'web',
      $lib_version: '1.149.2',
      $insert_id: hex(16),
      $session_id: `0190${hex(4)}-${hex(4)}-7${hex(3)}-8${hex(3)}-${hex(12)}`,
      $window_id: `0190${hex(4)}-${hex(4)}-7${hex(3)}-9${hex(3)}-${hex(12)}`,
      $referrer: pick(['$direct', 'https://www.google.com/', 'https://news.ycombinator.com/']),
      $referring_domain: pick(['$direct', 'www.google.com', 'news.ycombinator.com']),
      $timezone: pick(['Europe/Berlin', 'America/New_York', 'Asia/Tokyo']),
      $raw_user_agent: `Mozilla/5.0 (${os}) AppleWebKit/537.36 (KHTML, like Gecko) ${browser}/120.0.0.0 Safari/537.36`,
      plan: pick(['free', 'pro', 'enterprise']),
      country: pick(countries),
      amount: Math.floor(rand() * 1000),
      distinct_id: distinctId,
    };
    const chain = rand() < 0.2 ? `button.btn.btn-primary:nth-child="${Math.floor(rand() * 5)}"nth-of-type="1"text="Go";div.hero:nth-child="1"nth-of-type="1"` : '';
    return {
      uuid: crypto.randomUUID(),
      teamId: rand() < 0.95 ? teams[0] : teams[1],
      event: pick(events),
      distinctId,
      personId: null,
      properties: JSON.stringify(props),
      timestamp,
      createdAt: timestamp + 50,
      elementsChain: chain,
      hot: hotValuesOf(props),
    };
  };
  return { next, users };
}

async function load(storage: Storage, total: number, teams: [number, number], log: (m: string) => void) {
  const gen = createGenerator(SEED, total, Date.now(), teams);
  const started = performance.now();
  const inFlight = new Set<Promise<void>>();
  let sent = 0;
  let lastLog = started;
  while (sent < total) {
    const rows: StoredEventRow[] = [];
    for (let k = 0; k < 10_000 && sent < total; k++, sent++) rows.push(gen.next());
    const append = appendWaiting(storage, rows);
    inFlight.add(append);
    append.finally(() => inFlight.delete(append));
    if (inFlight.size >= 4) await Promise.race(inFlight);
    if (performance.now() - lastLog > 15_000) {
      lastLog = performance.now();
      log(`loaded ${sent.toLocaleString()} rows (${Math.round(sent / ((lastLog - started) / 1000)).toLocaleString()} rows/s)`);
    }
  }
  await Promise.all(inFlight);
  await storage.events.flush();
  const seconds = (performance.now() - started) / 1000;
  return { seconds, users: gen.users };
}

interface Samples {
  http: number[];
  httpFirst: number[];
  direct: number[];
  /** The same request through the app in this process (`app.handle`): the chDB phase's baseline. */
  inproc: number[];
  naive: number[];
  statements: number;
  rows: number;
}

interface Case {
  name: string;
  query: Record<string, string>;
  /** A naive one-statement equivalent (over the whole relation), or null when the API runs one statement anyway. */
  naive: ((relation: string, teamId: number) => { sql: string; params: SqlParam[] }) | null;
  target?: number;
}

const COLS = 'uuid, event, distinct_id, properties, timestamp, elements_chain';
const nowPlus5s = () => new Date(Date.now() + 5_000).toISOString();
const latestNaive = (extra: string, params: SqlParam[]) => (relation: string, teamId: number) => ({
  sql: `SELECT ${COLS} FROM ${relation} AS events WHERE team_id = ? ${extra} AND timestamp < CAST(? AS TIMESTAMP) ORDER BY timestamp DESC LIMIT 100`,
  params: [teamId, ...params, nowPlus5s()],
});

function cases(users: string[]): Case[] {
  const dayStart = new Date(Date.now() - 3 * DAY).toISOString();
  const dayEnd = new Date(Date.now() - 2 * DAY).toISOString();
  return [
    { name: 'latest 100', query: {}, naive: latestNaive('', []), target: 50 },
    { name: 'by event (signed_up)', query: { event: 'signed_up' }, naive: latestNaive('AND event = ?', ['signed_up']), target: 50 },
    { name: 'by distinct_id', query: { distinct_id: users[123] as string }, naive: latestNaive('AND distinct_id = ?', [users[123] as string]), target: 150 },
    {
      name: 'by hot property ($browser = Opera)',
      query: { properties: JSON.stringify([{ key: '$browser', value: 'Opera' }]) },
      naive: latestNaive('AND mat_browser = ?', ['Opera']),
      target: 150,
    },
    {
      name: 'by JSON property (country = NZ)',
      query: { properties: JSON.stringify([{ key: 'country', value: 'NZ' }]) },
      naive: latestNaive("AND json_extract_string(properties, '/country') = ?", ['NZ']),
    },
    {
      name: 'one-day range',
      query: { after: dayStart, before: dayEnd },
      naive: (relation, teamId) => ({
        sql: `SELECT ${COLS} FROM ${relation} AS events WHERE team_id = ? AND timestamp > CAST(? AS TIMESTAMP) AND timestamp < CAST(? AS TIMESTAMP) ORDER BY timestamp DESC LIMIT 100`,
        params: [teamId, dayStart, dayEnd],
      }),
      target: 50,
    },
    { name: 'select event, count()', query: { select: JSON.stringify(['event', 'count()']) }, naive: null },
    { name: 'select $browser, count() over a week', query: { select: JSON.stringify(['properties.$browser', 'count()']), after: '-7d' }, naive: null },
    { name: 'select country, count() over a week', query: { select: JSON.stringify(['properties.country', 'count()']), after: '-7d' }, naive: null },
  ];
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

interface Recorded {
  sql: string;
  params: readonly SqlParam[];
}

/** Drain a statement on the store (rows are produced and converted, then dropped). */
async function drain(storage: Storage, s: Recorded): Promise<number> {
  let n = 0;
  for await (const rows of storage.events.streamQuery(s.sql, s.params)) n += rows.length;
  return n;
}

/** Replay what the API ran: the count alongside the rest, the rest in order. */
async function replay(storage: Storage, statements: Recorded[]) {
  const count = statements.filter((s) => /\bAS count\b/.test(s.sql));
  const rest = statements.filter((s) => !count.includes(s));
  await Promise.all([
    ...count.map((s) => drain(storage, s)),
    (async () => {
      for (const s of rest) await drain(storage, s);
    })(),
  ]);
}

function serverRssMb(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const m = /VmRSS:\s+(\d+) kB/.exec(status);
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

const bench: Benchmark = async ({ tmpDir, quick, log }) => {
  const total = Number(process.env.QUERY_BENCH_ROWS ?? (quick ? 300_000 : 10_000_000));
  // QUERY_BENCH_EXPORT_ROWS: the exports' row count (issue #20 states its csv target for 100k rows).
  const exportRows = Math.min(total, Number(process.env.QUERY_BENCH_EXPORT_ROWS ?? (quick ? 100_000 : 1_000_000)));
  const runs = quick ? 3 : 4;
  // QUERY_BENCH_DATA_DIR keeps the loaded data between runs (loading 10M events takes minutes):
  // the first run loads into it and leaves a marker, later runs with the same row count reuse it.
  const keep = process.env.QUERY_BENCH_DATA_DIR;
  const dataDir = keep ?? join(tmpDir, 'data');
  // A generous time limit: the JSON-property cases scan every event's properties to count them.
  const timeLimit = { QUERY_TIMEOUT_MS: '300000' };
  const config = loadConfig({
    ...timeLimit,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    BOOTSTRAP_EMAIL: TEST_KEYS.email,
    BOOTSTRAP_PERSONAL_API_KEY: TEST_KEYS.personal,
    BOOTSTRAP_PROJECT_API_KEY: TEST_KEYS.project,
  });
  // QUERY_BENCH_COPIES=off measures fresh data: no person-clustered copies (they exist only for
  // days settled for minutes), neither built here nor by the server's background.
  const copiesOn = process.env.QUERY_BENCH_COPIES !== 'off';
  const storeOptions = { dataDir, personCopies: copiesOn };
  const serverEnv = { LOG_LEVEL: 'warn', PERSON_COPIES: copiesOn ? 'on' : 'off', ...timeLimit };
  const marker = join(dataDir, 'bench-query.json');
  // QUERY_BENCH_CHDB=off skips the cases on chDB and their in-process DuckDB baseline.
  const chdbOn = process.env.QUERY_BENCH_CHDB !== 'off';
  const reused = keep ? await readMarker(marker, total) : null;
  let storage = await openStorage(withPipeline(storeOptions));
  let teamId: number;
  let loaded: { seconds: number; users: string[] };
  if (reused) {
    teamId = reused.teamId;
    loaded = { seconds: reused.seconds, users: createGenerator(SEED, total, 0, [0, 0]).users };
    log(`reusing ${total.toLocaleString()} events loaded into ${dataDir}`);
  } else {
    const account = await bootstrap(storage, config);
    if (!account) throw new Error(`${dataDir} holds another database: remove it or choose another QUERY_BENCH_DATA_DIR`);
    const other = await storage.management.createProject(account.organization.id, 'Other', {});
    teamId = account.project.id;
    log(`loading ${total.toLocaleString()} events through the event store`);
    loaded = await load(storage, total, [teamId, other.id], log);
    if (keep) await writeFile(marker, JSON.stringify({ total, teamId, seconds: loaded.seconds }));
  }
  // What the background does within minutes of a day settling (the loaded days are in the past):
  // person-clustered copies, which person lists read (src/storage/events/tiers/person-copies.ts).
  const copyStarted = performance.now();
  const copies = copiesOn ? await storage.events.buildPersonCopies() : 0;
  if (copies > 0) log(`wrote ${copies} person copies in ${((performance.now() - copyStarted) / 1000).toFixed(1)} s`);
  const stats = storage.events.stats();
  log(`loaded in ${loaded.seconds.toFixed(0)} s (${Math.round(total / loaded.seconds).toLocaleString()} rows/s); hot rows ${stats.hotRows}, parquet rows ${stats.parquetRows} in ${stats.parquetFiles} files`);
  // QUERY_BENCH_ONLY (a regular expression over case names, `csv`, `parquet` or `ndjson` for the exports) narrows a run.
  const only = process.env.QUERY_BENCH_ONLY ? new RegExp(process.env.QUERY_BENCH_ONLY, 'i') : null;
  const all = cases(loaded.users).filter((c) => !only || only.test(c.name));
  const formats = EXPORT_FORMATS.filter((format) => !only || only.test(format));
  const samples = new Map<string, Samples>();
  for (const c of all) samples.set(c.name, { http: [], httpFirst: [], direct: [], inproc: [], naive: [], statements: 0, rows: 0 });
  const exports = new Map(formats.map((format) => [format, { http: [] as number[], curl: [] as number[], direct: [] as number[], sameColumns: [] as number[], peak: 0, before: 0, at10: 0, at90: 0, bytes: 0, rows: 0 }]));
  const curl = Bun.which('curl');
  if (!curl) log('curl not found: the exports are timed with the fetch client only');

  // The machine is shared and noisy: direct and http alternate in cycles (the database file takes
  // one process at a time), and the medians are over every cycle's runs.
  for (let cycle = 0; cycle < CYCLES; cycle++) {
    if (cycle > 0) storage = await openStorage(withPipeline(storeOptions));
    await directPhase(storage, config, teamId, all, samples, runs, log);
    if (chdbOn) await inProcessPhase(inProcessGet(storage, config), teamId, all, samples, runs);
    for (const [format, e] of exports) {
      e.direct.push(await directCopy(storage, teamId, exportRows, tmpDir, format));
      if (format === 'csv') e.sameColumns.push(await directCsvColumns(storage, teamId, exportRows, tmpDir));
    }
    await storage.close();
    const server = await startServer(serverEnv, dataDir);
    try {
      await httpPhase(server.url, teamId, all, samples, runs);
      for (const [format, e] of exports) {
        // The runs alternate the clients, fetch first: the first fetch run of a cycle is the
        // format's first export since the server started, and the memory figures are its (as when
        // it was the only run). Every run must give the same rows.
        let rows: number | null = null;
        for (let run = 0; run < EXPORT_RUNS; run++) {
          const export_ = await httpExport(server.url, server.proc.pid, teamId, exportRows, format, tmpDir);
          if (rows !== null && export_.rows !== rows) throw new Error(`${format} export: ${export_.rows} rows, after ${rows}`);
          rows = export_.rows;
          e.http.push(export_.seconds);
          if (cycle === CYCLES - 1 && run === 0) Object.assign(e, { peak: export_.peak, before: export_.before, at10: export_.at10, at90: export_.at90, bytes: export_.bytes, rows: export_.rows });
          log(`cycle ${cycle + 1}/${CYCLES}: ${format} ${Math.round(export_.rows / export_.seconds).toLocaleString()} rows/s, server rss ${export_.before} → ${export_.at10} (10%) → ${export_.at90} (90%), peak ${export_.peak} MB`);
          if (curl) e.curl.push(await curlExport(curl, server.url, teamId, exportRows, format, tmpDir, rows));
        }
      }
    } finally {
      await server.stop();
    }
  }

  // The same cases answered from ClickHouse (EVENTS_STORE): the loaded events copied into a
  // standalone Debian 18.16 server, read by a server whose events are there. QUERY_BENCH_CLICKHOUSE=off skips it.
  const phase: PhaseInput = { storeOptions, serverEnv, teamId, all, runs, tmpDir, log };
  const onClickHouse = process.env.QUERY_BENCH_CLICKHOUSE === 'off' ? null : await clickhousePhase(phase);
  const onChdb = chdbOn ? await chdbPhase(phase) : null;

  const rows: BenchRow[] = all.map((c) => {
    const s = samples.get(c.name)!;
    const ch = onClickHouse?.samples.get(c.name);
    const chdb = onChdb?.samples.get(c.name);
    const http = median(s.http);
    const direct = median(s.direct);
    return {
      case: c.name,
      http_p50_ms: round(http),
      // The first request of a case after the server starts: nothing remembered yet (per-file counts).
      http_first_ms: round(median(s.httpFirst)),
      direct_p50_ms: round(direct),
      'http/direct': round(http / direct),
      naive_sql_ms: s.naive.length ? round(median(s.naive)) : null,
      target_ms: c.target ?? null,
      statements: s.statements,
      rows: s.rows,
      ...(onClickHouse ? { clickhouse_http_p50_ms: ch?.length ? round(median(ch)) : null, 'clickhouse/duckdb': ch?.length ? round(median(ch) / http) : null } : {}),
      ...(onClickHouse?.baseline ? clickhouseVersusBaseline(ch, onClickHouse.baseline.get(c.name)) : {}),
      ...(onChdb ? chdbVersusDuckdb(chdb, s.inproc) : {}),
    };
  });
  for (const [format, e] of exports) {
    const httpSeconds = median(e.http);
    const directSeconds = median(e.direct);
    rows.push({
      case: `${format} export of ${exportRows.toLocaleString()} rows`,
      http_p50_ms: round(httpSeconds * 1000),
      direct_p50_ms: round(directSeconds * 1000),
      'http/direct': round(httpSeconds / directSeconds),
      ...(e.sameColumns.length ? { direct_same_columns_ms: round(median(e.sameColumns) * 1000), 'http/same_columns': round(httpSeconds / median(e.sameColumns)) } : {}),
      naive_sql_ms: null,
      target_ms: null,
      statements: null,
      rows: e.rows,
      'rows/s': Math.round(e.rows / httpSeconds),
      'MB/s': round(e.bytes / 1e6 / httpSeconds),
      ...(e.curl.length ? { curl_p50_ms: round(median(e.curl) * 1000), 'rows/s (curl)': Math.round(e.rows / median(e.curl)) } : {}),
      rss_before_mb: e.before,
      rss_at_10pct_mb: e.at10,
      rss_at_90pct_mb: e.at90,
      rss_peak_mb: e.peak,
    });
  }
  const notes = [
    `${total.toLocaleString()} events (95% in the measured project), a month ending at load time; ${copiesOn ? 'person-clustered copies of settled days built before the queries' : 'fresh: no person-clustered copies (QUERY_BENCH_COPIES=off)'}; loaded through EventStore.append in ${loaded.seconds.toFixed(0)} s (${Math.round(total / loaded.seconds).toLocaleString()} rows/s); at query time ${stats.hotRows.toLocaleString()} rows in the hot table, ${stats.parquetRows.toLocaleString()} in ${stats.parquetFiles} Parquet files.`,
    `medians over ${CYCLES} cycles × ${runs} runs (after a warm-up each); http = the real server on loopback, whole body read; http_first = that warm-up, the first request of the case since the server started (per-file counts not yet remembered); direct = the statements the API ran for the same request (its first: per-file counts included), replayed on DuckDB in-process with the same concurrency; naive = one ORDER BY … LIMIT 100 statement over the team's whole relation.`,
    `exports (${[...exports].map(([format, e]) => `${format} ${(e.bytes / 1e6).toFixed(0)} MB`).join(', ') || 'none'}): the same newest ${exportRows.toLocaleString()} events in each format, body read whole (the Parquet one written to a file, then its rows counted by DuckDB); direct = DuckDB's own COPY of as many rows in that format (raw columns, properties as one JSON column, one unsorted statement); direct_same_columns (csv) = DuckDB's own COPY of the columns the csv export writes (one a property key, no person columns, unsorted); ${curl ? 'curl = the same export fetched by curl into a file (the http figures\' client reads the body in JavaScript, on the same two cores as the server), runs alternating with the fetch client\'s; ' : ''}${EXPORT_RUNS} runs of each a cycle, the memory figures from the last cycle's first; target ≥ 200,000 rows/s with the server's memory flat (rss at 10% vs 90% of the export).`,
  ];
  if (onClickHouse) notes.push(onClickHouse.note);
  if (onChdb) notes.push(onChdb.note);
  return { name: 'query', rows, notes };
};

function clickhouseVersusBaseline(ch: number[] | undefined, baseline: number[] | undefined) {
  const ok = ch?.length && baseline?.length;
  return { clickhouse_baseline_p50_ms: ok ? round(median(baseline)) : null, 'clickhouse/baseline': ok ? round(median(ch) / median(baseline)) : null };
}

/** What the ClickHouse phases are given: the loaded store, the server's settings, the cases. */
interface PhaseInput {
  storeOptions: { dataDir: string; personCopies: boolean };
  serverEnv: Record<string, string>;
  teamId: number;
  all: Case[];
  runs: number;
  tmpDir: string;
  log: (m: string) => void;
}

/** The in-process columns: DuckDB's always, chDB's and the ratio when chDB answered the case. */
function chdbVersusDuckdb(chdb: number[] | undefined, inproc: number[]) {
  const duckdb = inproc.length ? median(inproc) : null;
  const ok = chdb?.length && duckdb;
  return { inproc_p50_ms: duckdb === null ? null : round(duckdb), chdb_p50_ms: ok ? round(median(chdb)) : null, 'chdb/duckdb': ok ? round(median(chdb) / duckdb) : null };
}

/**
 * The cases on chDB (modern ClickHouse, in this process; the server cannot use it as EVENTS_STORE):
 * the loaded events copied into a chDB database, read by an app whose event store is there
 * (`eventsStore`, what EVENTS_STORE sets on a server; its own DATA_DIR with the same bootstrap keys
 * and project), asked through `app.handle`. No HTTP and no loopback in that time, so its baseline
 * is DuckDB asked the same way (inproc), not the http column. A case it does not answer (a 400) is
 * left out and named.
 */
async function chdbPhase({ storeOptions, serverEnv, teamId, all, runs, tmpDir, log }: PhaseInput): Promise<{ samples: Map<string, number[]>; note: string }> {
  const chdb = await openChdb(join(tmpDir, 'chdb'));
  try {
    const { copied, seconds } = await copyEventsInto(chdb.ch, storeOptions);
    log(`copied ${copied.toLocaleString()} events into chDB ${chdb.ch.version} in ${seconds.toFixed(0)} s`);
    const app = await openClickHouseApp(chdb.ch, join(tmpDir, 'chdb-app-data'), serverEnv, storeOptions.personCopies);
    const samples = new Map<string, number[]>();
    const refused: string[] = [];
    try {
      if (app.projectId !== teamId) throw new Error(`the chDB app's project is ${app.projectId}, the loaded events' ${teamId}`);
      for (const c of all) {
        const path = eventsPath(teamId, c.query);
        const probe = await app.get(path);
        if (probe.status !== 200) {
          refused.push(`${c.name} (${probe.status})`);
          continue;
        }
        samples.set(c.name, await timedAll(runs, () => app.get(path)));
        log(`chdb ${c.name}: ${median(samples.get(c.name)!).toFixed(1)} ms`);
      }
    } finally {
      await app.close();
    }
    return {
      samples,
      note: `chdb_p50_ms: the same requests through app.handle in this process (no HTTP, no loopback) to an app keeping its events in chDB ${chdb.ch.version} (eventsStore, ${copied.toLocaleString()} events copied in ${seconds.toFixed(0)} s), medians of ${runs} runs after a warm-up; chdb/duckdb divides it by inproc_p50_ms, DuckDB asked the same way in the direct window of each cycle (${CYCLES} × ${runs} runs): both without the socket, so the ratio is of the engines behind one API; not answered there: ${refused.join(', ') || 'none'}.`,
    };
  } finally {
    await chdb.close();
  }
}

/** The cases through an in-process app over DuckDB (the chDB phase's baseline). */
async function inProcessPhase(get: InProcessGet, teamId: number, all: Case[], samples: Map<string, Samples>, runs: number) {
  for (const c of all) {
    const path = eventsPath(teamId, c.query);
    const answer = async () => {
      const res = await get(path);
      if (res.status !== 200) throw new Error(`in process: ${res.status} ${res.body.slice(0, 300)}`);
    };
    samples.get(c.name)!.inproc.push(...(await timedAll(runs, answer)));
  }
}

const eventsPath = (teamId: number, query: Record<string, string>) => `/api/projects/${teamId}/events/?${new URLSearchParams(query)}`;

/**
 * The cases over HTTP against a server keeping its events in ClickHouse 18.16: the loaded events
 * (both projects) copied from DuckDB into a standalone server, one INSERT per 50k rows, then read
 * by a fresh server with EVENTS_STORE (its own DATA_DIR: the same bootstrap keys and project).
 * A case ClickHouse does not answer yet (a 400: persons, exports) is left out and named.
 */
async function clickhousePhase({ storeOptions, serverEnv, teamId, all, runs, tmpDir, log }: PhaseInput): Promise<{ samples: Map<string, number[]>; baseline?: Map<string, number[]>; note: string } | null> {
  if (missingEngines().some((m) => m.includes('clickhouse'))) {
    log('ClickHouse cases skipped: clickhouse-server is not installed');
    return null;
  }
  const dir = join(tmpDir, 'clickhouse');
  const own = { http: await freePort(), tcp: await freePort() };
  const server = await startClickHouse(dir, 0, [own], join(dir, 'clickhouse.log'), { standalone: true });
  let ch: ClickHouse | null = null;
  try {
    ch = await openClickHouse(parseClickHouseUrl(server.url));
    const { copied, seconds: copySeconds } = await copyEventsInto(ch, storeOptions);
    log(`copied ${copied.toLocaleString()} events into ClickHouse 18.16 in ${copySeconds.toFixed(0)} s`);
    const app = await startServer({ ...serverEnv, EVENTS_STORE: server.url }, join(tmpDir, 'clickhouse-server-data'));
    // QUERY_BENCH_CLICKHOUSE_BASELINE: another checkout (e.g. a `git worktree` of the commit before
    // a change, with its node_modules) served beside this one over the same ClickHouse database;
    // the two are asked in turns, so their ratio is of one run, one data set, one machine state.
    const baselineDir = process.env.QUERY_BENCH_CLICKHOUSE_BASELINE;
    const baseline = baselineDir
      ? await startServer({ ...serverEnv, EVENTS_STORE: server.url }, join(tmpDir, 'clickhouse-baseline-data'), [process.execPath, join(baselineDir, 'src/index.ts')], baselineDir)
      : null;
    const samples = new Map<string, number[]>();
    const baselineSamples = new Map<string, number[]>();
    const refused: string[] = [];
    const measure = async (url: string, c: Case) => {
      const one: Samples = { http: [], httpFirst: [], direct: [], inproc: [], naive: [], statements: 0, rows: 0 };
      await httpPhase(url, teamId, [c], new Map([[c.name, one]]), runs);
      return one.http;
    };
    try {
      for (const c of all) {
        const url = `${app.url}/api/projects/${teamId}/events/?${new URLSearchParams(c.query)}`;
        const probe = await fetch(url, { headers: { authorization: `Bearer ${TEST_KEYS.personal}` } });
        await probe.text();
        if (probe.status !== 200) {
          refused.push(`${c.name} (${probe.status})`);
          continue;
        }
        for (let turn = 0; turn < (baseline ? 2 : 1); turn++) {
          samples.set(c.name, [...(samples.get(c.name) ?? []), ...(await measure(app.url, c))]);
          if (baseline) baselineSamples.set(c.name, [...(baselineSamples.get(c.name) ?? []), ...(await measure(baseline.url, c))]);
        }
      }
    } finally {
      await app.stop();
      await baseline?.stop();
    }
    const versus = baseline
      ? ` clickhouse_baseline_p50_ms: the same requests in turn to a server from ${baselineDir} over the same database (2 turns × ${runs} runs each, after a warm-up each turn).`
      : '';
    return {
      samples,
      ...(baseline ? { baseline: baselineSamples } : {}),
      note: `clickhouse_http_p50_ms: the same requests to a server keeping its events in ClickHouse 18.16 (EVENTS_STORE; a standalone Debian server on this machine, ${copied.toLocaleString()} events copied in ${copySeconds.toFixed(0)} s; FINAL, a person's list from the person-ordered copy), medians of ${runs} runs after a warm-up; not answered there yet: ${refused.join(', ') || 'none'}.${versus}`,
    };
  } finally {
    await ch?.close();
    await stopAll([server.started], 'SIGTERM', 15_000);
    await rm(dir, { recursive: true, force: true });
  }
}

async function directPhase(
  storage: Storage,
  config: Deps['config'],
  teamId: number,
  all: Case[],
  samples: Map<string, Samples>,
  runs: number,
  log: (m: string) => void,
) {
  const recorded: Recorded[] = [];
  const recording = new Proxy(storage.events, {
    get(target, key) {
      if (key === 'streamQuery') {
        return (sql: string, params: readonly SqlParam[] = [], options?: Parameters<Storage['events']['streamQuery']>[2]) => {
          recorded.push({ sql, params });
          return target.streamQuery(sql, params, options);
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  // The events API reads through storage.eventReads: the DuckDB one over the recording store.
  const deps: Deps = { config, storage: { ...storage, events: recording, eventReads: duckdbEventReads(recording) } as Storage, logger: silentLogger, version: 'bench', now: () => new Date(), metrics: createAppMetrics() };
  const service = createEventsService(deps);
  const url = (q: Record<string, string>) => `http://bench.local/api/projects/${teamId}/events/?${new URLSearchParams(q)}`;
  const relation = (await storage.events.eventsRelation(teamId)).sql;
  for (const c of all) {
    recorded.length = 0;
    const result = (await service.list(teamId, c.query, url(c.query))) as { results: unknown[] };
    const statements = [...recorded];
    const s = samples.get(c.name)!;
    s.statements = statements.length;
    s.rows = result.results.length;
    s.direct.push(...(await timedAll(runs, () => replay(storage, statements))));
    if (c.naive) s.naive.push(...(await timedAll(runs, () => drain(storage, c.naive!(relation, teamId)))));
    log(`direct ${c.name}: ${median(s.direct).toFixed(1)} ms over ${statements.length} statement(s)${c.naive ? `, naive ${median(s.naive).toFixed(1)} ms` : ''}`);
  }
}

const EXPORT_FORMATS = ['csv', 'parquet', 'ndjson'] as const;
type ExportFormat = (typeof EXPORT_FORMATS)[number];
/** DuckDB's COPY options per format: its JSON writer writes one object a line. */
const COPY_OPTIONS: Record<ExportFormat, string> = { csv: 'FORMAT csv', parquet: 'FORMAT parquet, COMPRESSION zstd', ndjson: 'FORMAT json' };

async function directCopy(storage: Storage, teamId: number, rows: number, tmpDir: string, format: ExportFormat): Promise<number> {
  const relation = (await storage.events.eventsRelation(teamId)).sql;
  const file = join(tmpDir, `direct.${format}`);
  const started = performance.now();
  await drain(storage, {
    // Unsorted (the files are newest first anyway): a sort of a million ~1 KB rows in one
    // statement needs more than DuckDB's memory limit here.
    sql: `COPY (SELECT uuid, distinct_id, event, timestamp, elements_chain, properties FROM ${relation} AS events WHERE team_id = ? LIMIT ?) TO '${file}' (${COPY_OPTIONS[format]})`,
    params: [teamId, rows],
  });
  const seconds = (performance.now() - started) / 1000;
  await rm(file, { force: true });
  return seconds;
}

/**
 * DuckDB's own COPY of the columns a csv export writes: the fixed ones and one a property key of
 * the rows (each row's properties parsed once for all keys, as the export does), as many rows,
 * unsorted, no person columns. What DuckDB's CSV writer costs for that output, next to the export.
 */
async function directCsvColumns(storage: Storage, teamId: number, rows: number, tmpDir: string): Promise<number> {
  const relation = (await storage.events.eventsRelation(teamId)).sql;
  const page = `(SELECT uuid, distinct_id, event, timestamp, elements_chain, properties FROM ${relation} AS events WHERE team_id = ? LIMIT ?)`;
  const keys: string[] = [];
  for await (const chunk of storage.events.streamQuery(`SELECT DISTINCT unnest(json_keys(properties)) AS k FROM ${page} ORDER BY k`, [teamId, rows])) {
    for (const r of chunk) keys.push(String((r as { k: unknown }).k));
  }
  const pointers = keys.map((k) => `'/${k.replaceAll('~', '~0').replaceAll('/', '~1').replaceAll("'", "''")}'`).join(', ');
  const columns = ['distinct_id', 'elements_chain', 'event', 'uuid', ...keys.map((_, i) => `p[${i + 1}]`), `strftime(timestamp, '%Y-%m-%dT%H:%M:%S.%f+00:00')`];
  const file = join(tmpDir, 'direct-columns.csv');
  const started = performance.now();
  await drain(storage, {
    sql: `COPY (SELECT ${columns.join(', ')} FROM (SELECT *, ${keys.length ? `json_extract_string(properties, [${pointers}])` : 'NULL'} AS p FROM ${page})) TO '${file}' (FORMAT csv)`,
    params: [teamId, rows],
  });
  const seconds = (performance.now() - started) / 1000;
  await rm(file, { force: true });
  return seconds;
}

async function httpPhase(
  base: string,
  teamId: number,
  all: Case[],
  samples: Map<string, Samples>,
  runs: number,
) {
  const get = async (q: Record<string, string>) => {
    const res = await fetch(`${base}/api/projects/${teamId}/events/?${new URLSearchParams(q)}`, { headers: { authorization: `Bearer ${TEST_KEYS.personal}` } });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`${res.status} ${body.slice(0, 300)}`);
  };
  for (const c of all) {
    const s = samples.get(c.name)!;
    s.http.push(...(await timedAll(runs, () => get(c.query), s.httpFirst)));
  }
}

/**
 * An export over HTTP: its time, and the server's resident memory sampled while it streams. CSV
 * and NDJSON rows are counted as their lines come (CSV less its header); a Parquet body is written
 * to a file as it comes, and its rows counted from the file by DuckDB once the time is taken.
 */
async function httpExport(base: string, pid: number, teamId: number, limit: number, format: ExportFormat, tmpDir: string) {
  const before = serverRssMb(pid);
  const rss: number[] = [];
  const sampler = setInterval(() => rss.push(serverRssMb(pid)), 100);
  const file = join(tmpDir, 'http-export.parquet');
  const sink = format === 'parquet' ? Bun.file(file).writer() : null;
  const started = performance.now();
  const res = await fetch(`${base}/api/projects/${teamId}/events/?format=${format}&limit=${limit}`, { headers: { authorization: `Bearer ${TEST_KEYS.personal}` } });
  if (res.status !== 200) throw new Error(`${format} export: ${res.status} ${await res.text()}`);
  let bytes = 0;
  let lines = 0;
  const reader = res.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.length;
    if (sink) sink.write(value);
    else lines += lineCount(value);
  }
  await sink?.end();
  const seconds = (performance.now() - started) / 1000;
  clearInterval(sampler);
  const rows = format === 'parquet' ? await parquetRows(file) : format === 'csv' ? lines - 1 : lines;
  await rm(file, { force: true });
  return {
    seconds,
    bytes,
    rows,
    before,
    peak: Math.max(before, ...rss),
    at10: rss[Math.floor(rss.length / 10)] ?? before,
    at90: rss[Math.floor((rss.length * 9) / 10)] ?? before,
  };
}

/**
 * An export fetched by curl into a file: its time (a client that costs the machine little beside
 * the server). The body's rows, counted as `httpExport` counts them, must be `expected`.
 */
async function curlExport(curl: string, base: string, teamId: number, limit: number, format: ExportFormat, tmpDir: string, expected: number): Promise<number> {
  const file = join(tmpDir, `curl-export.${format}`);
  const url = `${base}/api/projects/${teamId}/events/?format=${format}&limit=${limit}`;
  const started = performance.now();
  const proc = Bun.spawn([curl, '-s', '-o', file, '-w', '%{http_code}', '-H', `authorization: Bearer ${TEST_KEYS.personal}`, url], { stdout: 'pipe', stderr: 'ignore' });
  const [status, code] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  const seconds = (performance.now() - started) / 1000;
  try {
    if (code !== 0 || status !== '200') throw new Error(`${format} export by curl: exit ${code}, status ${status}`);
    const rows = format === 'parquet' ? await parquetRows(file) : lineCount(new Uint8Array(await Bun.file(file).arrayBuffer())) - (format === 'csv' ? 1 : 0);
    if (rows !== expected) throw new Error(`${format} export by curl: ${rows} rows, not ${expected}`);
  } finally {
    await rm(file, { force: true });
  }
  return seconds;
}

function lineCount(bytes: Uint8Array): number {
  let lines = 0;
  for (let i = bytes.indexOf(10); i >= 0; i = bytes.indexOf(10, i + 1)) lines++;
  return lines;
}

async function parquetRows(file: string): Promise<number> {
  const instance = await DuckDBInstance.create(':memory:');
  const c = await instance.connect();
  try {
    const [row] = (await c.runAndReadAll(`SELECT count(*) AS n FROM read_parquet('${file.replaceAll("'", "''")}')`)).getRowObjectsJS();
    return Number(row?.n);
  } finally {
    c.closeSync();
    instance.closeSync();
  }
}

/** One warm-up, then `runs` timed runs; `first` gets the warm-up's time. */
async function timedAll(runs: number, fn: () => Promise<unknown>, first?: number[]): Promise<number[]> {
  const t = performance.now();
  await fn();
  first?.push(performance.now() - t);
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return times;
}

const round = (n: number) => Math.round(n * 10) / 10;

export default bench;
