import { Type as t, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/**
 * Plain TypeBox (not Elysia's `t`, whose numbers are string-coercing unions) so the schema
 * describes exactly the values after conversion.
 *
 * The one reader of the environment. Every setting is declared here with its type and default,
 * validated once at start (every bad key listed in one error), then frozen and passed down.
 */
const Int = (def: number, min: number, max: number, description: string) =>
  t.Integer({ default: def, minimum: min, maximum: max, description });
const OnOff = (def: 'on' | 'off', description: string) => t.Union([t.Literal('on'), t.Literal('off')], { default: def, description });

export const ConfigSchema = t.Object({
  PORT: Int(8000, 0, 65535, 'TCP port to listen on (0 = any free port).'),
  HOST: t.String({ default: '0.0.0.0', minLength: 1, examples: ['0.0.0.0', '127.0.0.1', '::'], description: 'Address to bind.' }),
  REUSE_PORT: OnOff(
    'off',
    'off: refuse to start (exit 75) when another process listens on PORT. on: share the port with it (SO_REUSEPORT: the kernel splits connections between the processes).',
  ),
  DATA_DIR: t.String({ default: './data', minLength: 1, description: 'Where the DuckDB file, the write-ahead log and Parquet files live.' }),
  LOG_LEVEL: t.Union([t.Literal('debug'), t.Literal('info'), t.Literal('warn'), t.Literal('error'), t.Literal('silent')], {
    default: 'info',
    description: 'debug, info, warn, error or silent.',
  }),
  DURABILITY: t.Union([t.Literal('durable'), t.Literal('relaxed')], {
    default: 'durable',
    description: 'durable: a 200 is sent after the request is fsynced in the log (group commit). relaxed: after the write, before the fsync.',
  }),
  INGEST_PARSE_THREADS: Int(1, 0, 16, 'Worker threads that decode, parse, normalize and encode capture bodies off the main thread: large ones (16 KiB and up) as they arrive, small ones in runs behind the 200. 0: the main thread does.'),
  MAX_BODY_BYTES: Int(20 * 1024 * 1024, 1024, 1024 * 1024 * 1024, 'Largest accepted request body on the public endpoints, also after decompression (bytes).'),
  DUCKDB_MEMORY_LIMIT: t.String({
    default: '512MB',
    pattern: '^\\d+(\\.\\d+)?\\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$',
    examples: ['1GB', '512MB', '4GiB'],
    description: "DuckDB's memory cap (e.g. 2GB); beyond it, queries and compaction spill to DATA_DIR/tmp. The whole process is planned at twice it (1 GB by default): once its resident size passes 80% of that, its main thread also collects its garbage early.",
  }),
  PERSON_COPIES: OnOff(
    'on',
    "on: settled days also get a copy clustered by person (about doubles their disk use), which a person's events list reads. off: those lists read the time-ordered files.",
  ),
  API_CORS_ORIGINS: t.Optional(
    t.String({
      pattern: '^\\s*https?://[^\\s,/]+\\s*(,\\s*https?://[^\\s,/]+\\s*)*$',
      examples: ['https://app.example.com', 'https://app.example.com,https://admin.example.com'],
      description:
        'Comma-separated origins (scheme://host[:port]) whose pages may call the private API (/api/…) from a browser; unset: none. The public ingestion and flag endpoints answer any origin.',
    }),
  ),
  META_STORE: t.Optional(
    t.String({
      pattern: '^postgres(ql)?://[^\\s/?#]+/[^\\s/?#]+(\\?\\S*)?$',
      examples: ['postgres://hogbase@127.0.0.1:5432/hogbase'],
      description:
        'postgres://USER[:PASSWORD]@HOST:PORT/DATABASE: organizations, users, keys, projects, invites, flags, cohorts, definitions and persons are kept in that PostgreSQL database (tables made on start), shared by every server process that names it; unset: in the DuckDB database in DATA_DIR.',
    }),
  ),
  ROLE: t.Optional(
    t.Union([t.Literal('node'), t.Literal('writer')], {
      description:
        'Cluster mode (unset: one embedded server with everything in DATA_DIR). node: serves capture, flags and the private API; capture requests go to EVENT_LOG, the rest is read from META_STORE. writer: serves nothing; processes EVENT_LOG (persons in META_STORE) into EVENTS_STORE.',
    }),
  ),
  EVENT_LOG: t.Optional(
    t.String({
      pattern: '^redis://[^\\s/?#]+(/\\d+)?$',
      examples: ['redis://127.0.0.1:6379'],
      description:
        'redis://HOST:PORT[/DB] (ROLE=node and writer): the durable log between nodes and writers, Redis Streams on a Redis with appendonly yes and appendfsync always (refused otherwise).',
    }),
  ),
  EVENTS_STORE: t.Optional(
    t.String({
      pattern: '^clickhouse://[^\\s/?#]+/[A-Za-z_][A-Za-z0-9_]*$',
      examples: ['clickhouse://default@127.0.0.1:8123/hogbase'],
      description:
        'clickhouse://[USER[:PASSWORD]@]HOST:PORT/DATABASE (the HTTP port): the events are kept in that ClickHouse database (tables made on start). Without ROLE this server logs and processes them in DATA_DIR as ever and loads them there; a writer inserts there; a node reads its events API from there. Unset: in DATA_DIR (DuckDB and Parquet).',
    }),
  ),
  MIN_FREE_DISK_MB: Int(256, 0, 1024 * 1024, 'Free space kept on the disk of DATA_DIR (MiB): below it, ingestion answers 503 with Retry-After.'),
  MAX_BACKLOG_SECONDS: Int(10, 1, 3600, "How far the event store may fall behind its acknowledgements, in seconds of loading at its recent speed: past it, ingestion answers 503 with Retry-After, so an acknowledged event is queryable within about this long. The log's 2 GB cap holds whatever this is."),
  METRICS: OnOff('on', 'on: GET /metrics serves Prometheus metrics, without authentication (counts, sizes and durations; no user data). off: no such route.'),
  EVENTS_RETENTION_DAYS: t.Optional(
    t.Integer({
      minimum: 1,
      maximum: 36500,
      description:
        "Days of events a project keeps, unless its own events_retention_days (PATCH /api/projects/:id/) says otherwise; unset: forever. Whole days older than that are dropped within a minute of a change, then hourly.",
    }),
  ),
  INVITE_EXPIRY_DAYS: Int(3, 1, 3650, 'Days after which an organization invite is expired.'),
  QUERY_TIMEOUT_MS: Int(30_000, 100, 3_600_000, 'Time limit of one events query (the events API and POST /query/).'),
  QUERY_MAX_ROWS: Int(100_000, 1, 100_000_000, 'Row cap of one select/where or HogQL query (exports stream without it).'),
  UV_THREADPOOL_SIZE: t.Optional(
    t.Integer({ minimum: 1, maximum: 1024, description: "Threads of Bun's pool for DuckDB statements and file I/O, read by the runtime at start (npm start sets 16; the server warns under 8)." }),
  ),
  BOOTSTRAP_EMAIL: t.Optional(t.String({ pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$', examples: ['ada@example.com'], description: 'E-mail of the user made on first start.' })),
  BOOTSTRAP_PERSONAL_API_KEY: t.Optional(t.String({ pattern: '^phx_[A-Za-z0-9_-]{8,}$', examples: ['phx_Ab3dEf6hIj9k'], description: 'Personal API key (phx_…) of that user.' })),
  BOOTSTRAP_PROJECT_API_KEY: t.Optional(t.String({ pattern: '^phc_[A-Za-z0-9_-]{8,}$', examples: ['phc_Ab3dEf6hIj9k'], description: 'Project API key (phc_…) of the first project.' })),
  BOOTSTRAP_ORGANIZATION_NAME: t.String({ default: 'Default organization', minLength: 1, description: 'Name of the organization made on first start.' }),
});

export type Config = Readonly<Static<typeof ConfigSchema>>;

/** One line per bad setting, naming what it takes: an operator fixes them all in one go. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.map((p) => `Invalid configuration: ${p}`).join('\n'));
    this.name = 'ConfigError';
  }
}

type SettingSchema = { type?: string; minimum?: number; maximum?: number; examples?: string[]; anyOf?: Array<{ const?: string }> };

/** What a setting takes, in words: its allowed values, its range or an example. */
export function expectedValue(key: string): string {
  const s = ConfigSchema.properties[key as keyof typeof ConfigSchema.properties] as SettingSchema;
  if (s.anyOf) return `one of ${s.anyOf.map((o) => o.const).join(', ')}`;
  if (s.type === 'integer') return `an integer from ${s.minimum} to ${s.maximum}`;
  if (s.examples) return `a value such as ${s.examples.join(' or ')}`;
  return 'a non-empty value';
}

const INTEGER_KEYS = new Set(
  Object.entries(ConfigSchema.properties)
    .filter(([, s]) => (s as SettingSchema).type === 'integer')
    .map(([k]) => k),
);

/** Settings whose value may hold a password. */
const URL_KEYS = new Set(['META_STORE', 'EVENT_LOG', 'EVENTS_STORE']);

/** A database URL's password never goes to the log. */
const withoutPassword = (url: unknown) => String(url).replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

/** Read the settings from `env` (process.env by default). Throws ConfigError listing every bad key. */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const raw: Record<string, unknown> = {};
  const problems: string[] = [];
  const bad = (key: string, got: unknown) => problems.push(`${key}: expected ${expectedValue(key)}; got ${JSON.stringify(URL_KEYS.has(key) ? withoutPassword(got) : got)}`);
  for (const key of Object.keys(ConfigSchema.properties)) {
    const value = env[key];
    if (value === undefined || value === '') continue;
    if (INTEGER_KEYS.has(key)) {
      if (!/^-?\d+$/.test(value.trim())) {
        bad(key, value);
        continue;
      }
      raw[key] = Number(value.trim());
    } else raw[key] = value;
  }
  Object.assign(raw, overrides);
  const withDefaults = Value.Default(ConfigSchema, raw) as Record<string, unknown>;
  for (const error of Value.Errors(ConfigSchema, withDefaults)) {
    const key = error.path.replace(/^\//, '').split('/')[0];
    if (problems.some((p) => p.startsWith(`${key}:`))) continue;
    bad(key, env[key] ?? withDefaults[key]);
  }
  if (!problems.length) problems.push(...roleProblems(withDefaults as Config));
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze(withDefaults as Config);
}

/** What each cluster role cannot run without (a node's events go to the log; a writer's from it to ClickHouse, persons in PostgreSQL). */
const ROLE_NEEDS: Record<NonNullable<Config['ROLE']>, ReadonlyArray<keyof Config>> = {
  node: ['EVENT_LOG', 'META_STORE'],
  writer: ['EVENT_LOG', 'META_STORE', 'EVENTS_STORE'],
};

/**
 * Combinations that cannot run, found at start rather than at the first request: a role without
 * what it needs, and the cluster's log without a role (an embedded server would silently ignore
 * it). EVENTS_STORE alone is an embedded server keeping its events in ClickHouse.
 */
function roleProblems(c: Config): string[] {
  if (!c.ROLE) {
    return (['EVENT_LOG'] as const).filter((k) => c[k] !== undefined).map((k) => `${k}: is read only in cluster mode; set ROLE (node or writer), or unset ${k}`);
  }
  return ROLE_NEEDS[c.ROLE].filter((k) => c[k] === undefined).map((k) => `${k}: ROLE=${c.ROLE} needs it (${expectedValue(k)})`);
}

/** Rows of the README's configuration table, generated from the schema so the two never disagree. */
export function describeConfig(): Array<{ key: string; default: string; description: string }> {
  return Object.entries(ConfigSchema.properties).map(([key, s]) => {
    const schema = s as { default?: unknown; description?: string };
    return { key, default: schema.default === undefined ? '' : String(schema.default), description: schema.description ?? '' };
  });
}
