import { describe, expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError, describeConfig, loadConfig } from '../src/config';

describe('config', () => {
  test('defaults', () => {
    expect(loadConfig({})).toEqual({
      PORT: 8000,
      HOST: '0.0.0.0',
      REUSE_PORT: 'off',
      DATA_DIR: './data',
      LOG_LEVEL: 'info',
      DURABILITY: 'durable',
      INGEST_PARSE_THREADS: 1,
      MAX_BODY_BYTES: 20 * 1024 * 1024,
      DUCKDB_MEMORY_LIMIT: '512MB',
      PERSON_COPIES: 'on',
      MIN_FREE_DISK_MB: 256,
      MAX_BACKLOG_SECONDS: 10,
      METRICS: 'on',
      INVITE_EXPIRY_DAYS: 3,
      QUERY_TIMEOUT_MS: 30000,
      QUERY_MAX_ROWS: 100000,
      BOOTSTRAP_ORGANIZATION_NAME: 'Default organization',
    });
  });

  test('reads and converts values, and is frozen', () => {
    const c = loadConfig({ PORT: '9001', LOG_LEVEL: 'debug', DURABILITY: 'relaxed', BOOTSTRAP_EMAIL: 'a@b.co' });
    expect(c.PORT).toBe(9001);
    expect(c.LOG_LEVEL).toBe('debug');
    expect(c.DURABILITY).toBe('relaxed');
    expect(c.BOOTSTRAP_EMAIL).toBe('a@b.co');
    expect(Object.isFrozen(c)).toBe(true);
  });

  test('every bad key is listed in one error, one line each naming what it takes', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', LOG_LEVEL: 'loud', DURABILITY: 'maybe', BOOTSTRAP_PERSONAL_API_KEY: 'nope', MAX_BODY_BYTES: '12', DUCKDB_MEMORY_LIMIT: 'lots', REUSE_PORT: 'yes' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message.split('\n')).toEqual([
      'Invalid configuration: PORT: expected an integer from 0 to 65535; got "eighty"',
      'Invalid configuration: REUSE_PORT: expected one of on, off; got "yes"',
      'Invalid configuration: LOG_LEVEL: expected one of debug, info, warn, error, silent; got "loud"',
      'Invalid configuration: DURABILITY: expected one of durable, relaxed; got "maybe"',
      'Invalid configuration: MAX_BODY_BYTES: expected an integer from 1024 to 1073741824; got "12"',
      'Invalid configuration: DUCKDB_MEMORY_LIMIT: expected a value such as 1GB or 512MB or 4GiB; got "lots"',
      'Invalid configuration: BOOTSTRAP_PERSONAL_API_KEY: expected a value such as phx_Ab3dEf6hIj9k; got "nope"',
    ]);
  });

  test('cluster roles: each names what it needs, in one error; cluster settings without a role are refused', () => {
    const problems = (env: Record<string, string>) => {
      try {
        loadConfig(env);
        return [];
      } catch (e) {
        return (e as Error).message.split('\n');
      }
    };
    const pg = 'postgres://hogbase:secret@127.0.0.1:5432/hogbase';
    expect(problems({ ROLE: 'node' })).toEqual([
      'Invalid configuration: EVENT_LOG: ROLE=node needs it (a value such as redis://127.0.0.1:6379)',
      'Invalid configuration: META_STORE: ROLE=node needs it (a value such as postgres://hogbase@127.0.0.1:5432/hogbase)',
    ]);
    expect(problems({ ROLE: 'writer', EVENT_LOG: 'redis://127.0.0.1:6379', META_STORE: pg })).toEqual([
      'Invalid configuration: EVENTS_STORE: ROLE=writer needs it (a value such as clickhouse://default@127.0.0.1:8123/hogbase)',
    ]);
    expect(problems({ EVENT_LOG: 'redis://127.0.0.1:6379', EVENTS_STORE: 'clickhouse://127.0.0.1:8123/db' })).toEqual([
      'Invalid configuration: EVENT_LOG: is read only in cluster mode; set ROLE (node or writer), or unset EVENT_LOG',
    ]);
    expect(problems({ ROLE: 'leader', EVENT_LOG: 'http://x', EVENTS_STORE: 'clickhouse://u:pw@h:1/bad-name' })).toEqual([
      'Invalid configuration: ROLE: expected one of node, writer; got "leader"',
      'Invalid configuration: EVENT_LOG: expected a value such as redis://127.0.0.1:6379; got "http://x"',
      'Invalid configuration: EVENTS_STORE: expected a value such as clickhouse://default@127.0.0.1:8123/hogbase; got "clickhouse://u:***@h:1/bad-name"',
    ]);
    const writer = loadConfig({ ROLE: 'writer', EVENT_LOG: 'redis://127.0.0.1:6379/2', META_STORE: pg, EVENTS_STORE: 'clickhouse://default@127.0.0.1:8123/hogbase' });
    expect([writer.ROLE, writer.EVENT_LOG, writer.EVENTS_STORE]).toEqual(['writer', 'redis://127.0.0.1:6379/2', 'clickhouse://default@127.0.0.1:8123/hogbase']);
    // EVENTS_STORE alone: an embedded server keeping its events in ClickHouse.
    expect(loadConfig({ EVENTS_STORE: 'clickhouse://127.0.0.1:8123/db' }).EVENTS_STORE).toBe('clickhouse://127.0.0.1:8123/db');
    // A node may be given the writers' EVENTS_STORE too (one environment for every role).
    expect(loadConfig({ ROLE: 'node', EVENT_LOG: 'redis://127.0.0.1:6379', META_STORE: pg, EVENTS_STORE: 'clickhouse://127.0.0.1:8123/db' }).ROLE).toBe('node');
  });

  test("the README's configuration table is the schema's: every setting, its default and its meaning", () => {
    const readme = readFileSync(join(import.meta.dir, '..', 'README.md'), 'utf8');
    const rows = [...readme.matchAll(/^\| `([A-Z_]+)` \| (?:`([^`]*)`|\(unset\)) \| (.*) \|$/gm)]
      .map((m) => ({ key: m[1], default: m[2] ?? '', description: m[3] }));
    expect(rows).toEqual(describeConfig());
  });
});
