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

export const ConfigSchema = t.Object({
  PORT: Int(8000, 0, 65535, 'TCP port to listen on (0 = any free port).'),
  HOST: t.String({ default: '0.0.0.0', minLength: 1, description: 'Address to bind.' }),
  DATA_DIR: t.String({ default: './data', minLength: 1, description: 'Where the DuckDB file, the write-ahead log and Parquet files live.' }),
  LOG_LEVEL: t.Union([t.Literal('debug'), t.Literal('info'), t.Literal('warn'), t.Literal('error'), t.Literal('silent')], {
    default: 'info',
    description: 'debug, info, warn, error or silent.',
  }),
  DURABILITY: t.Union([t.Literal('durable'), t.Literal('relaxed')], {
    default: 'durable',
    description: 'durable: a 200 is sent after the request is fsynced in the log (group commit). relaxed: after the write, before the fsync.',
  }),
  INGEST_PARSE_THREADS: Int(1, 0, 16, 'Worker threads that decode, parse, normalize and encode large capture bodies (16 KiB and up) off the main thread. 0: the main thread does.'),
  MAX_BODY_BYTES: Int(20 * 1024 * 1024, 1024, 1024 * 1024 * 1024, 'Largest accepted request body on the public endpoints, also after decompression (bytes).'),
  DUCKDB_MEMORY_LIMIT: t.String({
    default: '1GB',
    pattern: '^\\d+(\\.\\d+)?\\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$',
    description: "DuckDB's memory cap (e.g. 2GB); beyond it, queries and compaction spill to DATA_DIR/tmp.",
  }),
  PERSON_COPIES: t.Union([t.Literal('on'), t.Literal('off')], {
    default: 'on',
    description: "on: settled days also get a copy clustered by person (about doubles their disk use), which a person's events list reads. off: those lists read the time-ordered files.",
  }),
  API_CORS_ORIGINS: t.Optional(
    t.String({
      pattern: '^\\s*https?://[^\\s,/]+\\s*(,\\s*https?://[^\\s,/]+\\s*)*$',
      description:
        'Comma-separated origins (scheme://host[:port]) whose pages may call the private API (/api/…) from a browser; unset: none. The public ingestion and flag endpoints answer any origin.',
    }),
  ),
  INVITE_EXPIRY_DAYS: Int(3, 1, 3650, 'Days after which an organization invite is expired.'),
  QUERY_TIMEOUT_MS: Int(30_000, 100, 3_600_000, 'Time limit of one events query.'),
  QUERY_MAX_ROWS: Int(100_000, 1, 100_000_000, 'Row cap of one select/where query (exports stream without it).'),
  BOOTSTRAP_EMAIL: t.Optional(t.String({ pattern: '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$', description: 'E-mail of the user made on first start.' })),
  BOOTSTRAP_PERSONAL_API_KEY: t.Optional(t.String({ pattern: '^phx_[A-Za-z0-9_-]{8,}$', description: 'Personal API key (phx_…) of that user.' })),
  BOOTSTRAP_PROJECT_API_KEY: t.Optional(t.String({ pattern: '^phc_[A-Za-z0-9_-]{8,}$', description: 'Project API key (phc_…) of the first project.' })),
  BOOTSTRAP_ORGANIZATION_NAME: t.String({ default: 'Default organization', minLength: 1, description: 'Name of the organization made on first start.' }),
});

export type Config = Readonly<Static<typeof ConfigSchema>>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const INTEGER_KEYS = new Set(
  Object.entries(ConfigSchema.properties)
    .filter(([, s]) => (s as { type?: string }).type === 'integer')
    .map(([k]) => k),
);

/** Read the settings from `env` (process.env by default). Throws ConfigError listing every bad key. */
export function loadConfig(env: Record<string, string | undefined> = process.env, overrides: Partial<Config> = {}): Config {
  const raw: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const key of Object.keys(ConfigSchema.properties)) {
    const value = env[key];
    if (value === undefined || value === '') continue;
    if (INTEGER_KEYS.has(key)) {
      if (!/^-?\d+$/.test(value.trim())) {
        problems.push(`${key}: expected an integer, got ${JSON.stringify(value)}`);
        continue;
      }
      raw[key] = Number(value.trim());
    } else raw[key] = value;
  }
  Object.assign(raw, overrides);
  const withDefaults = Value.Default(ConfigSchema, raw) as Record<string, unknown>;
  for (const error of Value.Errors(ConfigSchema, withDefaults)) {
    const key = error.path.replace(/^\//, '');
    if (problems.some((p) => p.startsWith(`${key}:`))) continue;
    problems.push(`${key}: ${error.message} (got ${JSON.stringify(withDefaults[key])})`);
  }
  if (problems.length) throw new ConfigError(problems);
  return Object.freeze(withDefaults as Config);
}

/** Rows of the README's configuration table, generated from the schema so the two never disagree. */
export function describeConfig(): Array<{ key: string; default: string; description: string }> {
  return Object.entries(ConfigSchema.properties).map(([key, s]) => {
    const schema = s as { default?: unknown; description?: string };
    return { key, default: schema.default === undefined ? '' : String(schema.default), description: schema.description ?? '' };
  });
}
