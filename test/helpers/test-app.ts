import { rm } from 'node:fs/promises';
import { createApp } from '../../src/app';
import { bootstrap } from '../../src/bootstrap';
import { loadConfig, type Config } from '../../src/config';
import type { Deps } from '../../src/deps';
import { silentLogger, type Logger } from '../../src/logger';
import { createAppMetrics } from '../../src/metrics';
import { openStorage, type CreatedAccount, type StorageOptions } from '../../src/storage';
import { withPipeline, type RowPreparer } from '../../src/pipeline';
import { createIngestParser, type IngestParserPool } from '../../src/workers/ingest-parser';
import { clickhouseServerUrl } from './clickhouse';
import { eventsProfile } from './duckdb-only';
import { createTestDatabase } from './postgres';
import { processTempDir } from './process-wide';

export const BASE = 'http://test.local';

export interface TestApp {
  app: ReturnType<typeof createApp>;
  deps: Deps;
  account: CreatedAccount;
  dataDir: string;
  /** Call the app in-process with a JSON body and the bootstrap personal key unless `key: null`. */
  call(method: string, path: string, options?: { body?: unknown; key?: string | null; headers?: Record<string, string> }): Promise<Response>;
  json<T = any>(method: string, path: string, options?: { body?: unknown; key?: string | null; headers?: Record<string, string> }): Promise<{ status: number; body: T; headers: Headers }>;
  close(): Promise<void>;
}

/** Event-store settings a test changes (small grace periods, load hooks). */
export type TestStoreOptions = NonNullable<StorageOptions['eventStore']>;

/**
 * The stores the tests' apps use: DuckDB unless a profile says otherwise.
 * - HOGBASE_TEST_META_STORE=postgres: each app gets a new database on the run's PostgreSQL
 *   server as META_STORE (test/storage/postgres-profile.test.ts runs API suites so).
 * - HOGBASE_TEST_EVENTS_STORE=clickhouse: each app also keeps its events in a new database on
 *   the run's ClickHouse 18.16 server (EVENTS_STORE), with META_STORE in PostgreSQL
 *   (test/storage/clickhouse-profile.test.ts).
 * An explicit META_STORE or EVENTS_STORE wins.
 */
let profileAnnounced = false;
export const PROFILE_ANNOUNCEMENT = "the apps' events are in ClickHouse 18.16 (EVENTS_STORE), their management data in PostgreSQL (META_STORE)";

async function profileEnv(env: Record<string, string>): Promise<Record<string, string>> {
  const out = { ...env };
  const events = eventsProfile && !env.EVENTS_STORE;
  if (events) {
    out.EVENTS_STORE = await clickhouseServerUrl();
    // Once per process: the profile's parent checks the child's apps really kept their events there.
    if (!profileAnnounced) console.warn(`[tests] ${PROFILE_ANNOUNCEMENT}`);
    profileAnnounced = true;
  }
  if (!env.META_STORE && (events || process.env.HOGBASE_TEST_META_STORE === 'postgres')) out.META_STORE = await createTestDatabase();
  return out;
}

/**
 * Storage options a test sets besides the event store's: `eventReads` answers the events API from
 * ClickHouse, `eventsStore` also loads the events there; `preparer`, what prepares rows in
 * another thread (null: none, the main thread does it all).
 */
export type TestStorageOptions = Pick<StorageOptions, 'eventReads' | 'eventsStore'> & { preparer?: RowPreparer | null };

/**
 * The parser thread the apps' processing uses, as the server's does by default
 * (`INGEST_PARSE_THREADS`): one per test process, started with the first app (it does not keep
 * the process alive).
 */
let sharedParser: IngestParserPool | null = null;
const defaultPreparer = (): RowPreparer => (sharedParser ??= createIngestParser(1, loadConfig({}).MAX_BODY_BYTES, silentLogger));

export async function createTestApp(
  env: Record<string, string> = {}, now: () => Date = () => new Date(), logger: Logger = silentLogger, store: TestStoreOptions = {}, storageOptions: TestStorageOptions = {},
): Promise<TestApp> {
  return openTestApp(await processTempDir('analytics-test-'), null, await profileEnv(env), now, logger, store, storageOptions);
}

/**
 * A second server process's app on the same management database as `t` (META_STORE), with its
 * own, empty data directory; `t` stays open. The same account and keys work on both.
 */
export async function createSharingTestApp(t: TestApp, env: Record<string, string> = {}, now: () => Date = () => new Date()): Promise<TestApp> {
  if (!t.deps.config.META_STORE) throw new Error('only apps with a META_STORE share their management data');
  return openTestApp(await processTempDir('analytics-test-'), t.account, { ...env, META_STORE: t.deps.config.META_STORE }, now, silentLogger, {});
}

/** The same data directory opened again, as a restarted server would (`t` is closed first, its data kept; a ClickHouse given in `storageOptions` stays open). */
export async function reopenTestApp(
  t: TestApp, env: Record<string, string> = {}, now: () => Date = () => new Date(), logger: Logger = silentLogger, store: TestStoreOptions = {}, storageOptions: TestStorageOptions = {},
): Promise<TestApp> {
  await t.deps.storage.close();
  const { META_STORE, EVENTS_STORE } = t.deps.config;
  const kept = { ...(META_STORE ? { META_STORE } : {}), ...(EVENTS_STORE ? { EVENTS_STORE } : {}) };
  return openTestApp(t.dataDir, t.account, { ...kept, ...env }, now, logger, store, storageOptions);
}

async function openTestApp(
  dataDir: string, known: CreatedAccount | null, env: Record<string, string>, now: () => Date, logger: Logger, store: TestStoreOptions, storageOptions: TestStorageOptions = {},
): Promise<TestApp> {
  const config: Config = loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, ...env });
  const { preparer = defaultPreparer(), ...stores } = storageOptions;
  // Queries wait up to 10 s (not the default 0.5 s) for events just captured: these tests check what is
  // stored, and a slow CI machine must not turn a load that takes a moment into a missing row
  // (the default bound is tested in test/storage/events/intake.test.ts).
  const storage = await openStorage(
    withPipeline({ dataDir, metaStore: config.META_STORE, ...eventsStoreOf(config, stores), durability: config.DURABILITY, personCopies: config.PERSON_COPIES === 'on', defaultRetentionDays: config.EVENTS_RETENTION_DAYS, now: () => now().getTime(), logger, eventStore: { visibilityTimeoutMs: 10_000, minFreeDiskBytes: config.MIN_FREE_DISK_MB * 1024 * 1024, ...store }, ...stores }, preparer ?? undefined),
  );
  const account = known ?? (await bootstrap(storage, config))!;
  const deps: Deps = { config, storage, logger, version: 'test', now, metrics: createAppMetrics() };
  const app = createApp(deps);
  const call: TestApp['call'] = (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const key = options.key === undefined ? account.personalApiKey.value : options.key;
    if (key) headers.authorization = `Bearer ${key}`;
    let body: string | undefined;
    if (options.body !== undefined) {
      body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    return app.handle(new Request(BASE + path, { method, headers, body }));
  };
  return {
    app,
    deps,
    account,
    dataDir,
    call,
    async json(method, path, options) {
      const res = await call(method, path, options);
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
    },
    async close() {
      await storage.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** EVENTS_STORE as storage opens it, unless the test gives its own ClickHouse. */
const eventsStoreOf = (config: Config, options: TestStorageOptions): { eventsStoreUrl?: string } =>
  config.EVENTS_STORE && !options.eventsStore && !options.eventReads ? { eventsStoreUrl: config.EVENTS_STORE } : {};

/** A second organization with its own user, project and key, in the same storage. */
export async function createOtherAccount(t: TestApp, email = 'other@example.com') {
  return t.deps.storage.management.createAccount({ email, organizationName: 'Other org' });
}

export const errorOf = (code: string, type: string, detail: string, attr: string | null = null) => ({ type, code, detail, attr });
export const NOT_FOUND = errorOf('not_found', 'invalid_request', 'Not found.');
export const NOT_AUTHENTICATED = errorOf('not_authenticated', 'authentication_error', 'Authentication credentials were not provided.');
