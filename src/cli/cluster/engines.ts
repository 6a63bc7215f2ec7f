import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { RedisClient, SQL } from 'bun';
import { EVENTS_CLUSTER } from '../../storage/clickhouse/schema';
import { isAlive, startDetached, waitUntil, type Started } from './processes';

/**
 * The engines of a local cluster, from the Debian packages (postgresql-15, redis-server,
 * clickhouse-server), each started from its binary with its data under DIR and listening on
 * loopback only: no systemd, no files outside DIR.
 */

const PG_ROOT = '/usr/lib/postgresql';
const REDIS_BIN = '/usr/bin/redis-server';
const CLICKHOUSE_BIN = '/usr/sbin/clickhouse-server';
/** Debian's `zookeeper` package: its jar names every library it needs (Class-Path). */
const ZOOKEEPER_JAR = '/usr/share/java/zookeeper.jar';
const JAVA_BIN = '/usr/bin/java';


/** Which engines are missing, each with the package that brings it. */
export function missingEngines(): string[] {
  const missing: string[] = [];
  if (!postgresBin()) missing.push(`PostgreSQL server binaries under ${PG_ROOT}/<version>/bin (apt-get install postgresql-15)`);
  if (!existsSync(REDIS_BIN)) missing.push(`${REDIS_BIN} (apt-get install redis-server)`);
  if (!existsSync(CLICKHOUSE_BIN)) missing.push(`${CLICKHOUSE_BIN} (apt-get install clickhouse-server)`);
  return missing;
}

function postgresBin(): string | null {
  if (!existsSync(PG_ROOT)) return null;
  const versions = readdirSync(PG_ROOT).filter((v) => existsSync(join(PG_ROOT, v, 'bin', 'postgres'))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(PG_ROOT, versions[0]!, 'bin') : null;
}

/** PostgreSQL refuses to run as root: then it runs as `postgres` (or `nobody`). */
export function postgresUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  for (const name of ['postgres', 'nobody']) {
    const uid = spawnSync('id', ['-u', name]);
    const gid = spawnSync('id', ['-g', name]);
    if (uid.status === 0 && gid.status === 0) return { uid: Number(uid.stdout.toString()), gid: Number(gid.stdout.toString()) };
  }
  throw new Error('running as root, and neither a postgres nor a nobody user exists to run PostgreSQL as');
}

/** PostgreSQL on `port` with its data in DIR/postgres (made on first start); resolves to the process and the `hogbase` database's URL. */
export async function startPostgres(dir: string, port: number, log: string): Promise<{ started: Started; url: string }> {
  const bin = postgresBin()!;
  const home = join(dir, 'postgres');
  const data = join(home, 'data');
  const user = postgresUser();
  const as = user ?? {};
  if (!existsSync(data)) {
    mkdirSync(home, { recursive: true });
    if (user) {
      chownSync(home, user.uid, user.gid);
      // The server's user must reach its directory through DIR.
      chmodSync(dir, statSync(dir).mode | 0o011);
    }
    const init = spawnSync(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C'], { ...as, cwd: home });
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr.toString()}`);
  }
  const argv = [join(bin, 'postgres'), '-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${home}`, '-c', 'max_connections=200'];
  const started = startDetached(argv, { log, cwd: home, ...as });
  const admin = new SQL(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, connectionTimeout: 2 });
  try {
    await waitUntil('PostgreSQL', async () => (await admin.unsafe('SELECT 1'), true), () => isAlive(started.pid), 30_000, log);
    const exists = await admin.unsafe(`SELECT 1 FROM pg_database WHERE datname = 'hogbase'`);
    if (!exists.length) await admin.unsafe('CREATE DATABASE hogbase');
  } finally {
    await admin.close().catch(() => undefined);
  }
  return { started, url: `postgres://postgres@127.0.0.1:${port}/hogbase` };
}

/** Redis with the durability the log needs (every write fsynced before the answer), data in DIR/redis. */
export async function startRedis(dir: string, port: number, log: string): Promise<{ started: Started; url: string }> {
  const home = join(dir, 'redis');
  mkdirSync(home, { recursive: true });
  const argv = [REDIS_BIN, '--bind', '127.0.0.1', '--port', String(port), '--dir', home, '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''];
  const started = startDetached(argv, { log, cwd: home });
  const url = `redis://127.0.0.1:${port}`;
  await waitUntil('Redis', () => redisAnswers(url), () => isAlive(started.pid), 15_000, log);
  return { started, url };
}

/** Whether Redis answers commands (not while it loads its append-only file: that answers LOADING). */
export async function redisAnswers(url: string): Promise<boolean> {
  const probe = new RedisClient(url, { autoReconnect: false, connectionTimeout: 500 });
  try {
    return (await probe.send('PING', [])) === 'PONG';
  } finally {
    probe.close();
  }
}

/** Whether the ClickHouse server on this HTTP port answers a query. */
export const clickhouseAnswers = async (httpPort: number) => (await fetch(`http://127.0.0.1:${httpPort}/?query=SELECT%201`)).ok;

/** The HTTP port ClickHouse server `index` of DIR listens on, from its config. */
export function clickhouseHttpPort(dir: string, index: number): number {
  const config = readFileSync(join(dir, `clickhouse-${index}`, 'config.xml'), 'utf8');
  return Number(/<http_port>(\d+)</.exec(config)![1]);
}

export interface ClickHousePorts {
  http: number;
  tcp: number;
}

/**
 * A replicated server's part: the ZooKeeper it coordinates through, and its `{shard}` and
 * `{replica}` macros (the replicated tables' paths and names take them).
 */
export interface ClickHouseReplication {
  zookeeperPort: number;
  /** Where the other replicas fetch this one's parts from (loopback). */
  interserverPort: number;
  shard: string;
  replica: string;
}

/**
 * A replica killed outright holds its "active" mark in ZooKeeper until its session expires, and
 * refuses to start replicating until then (18.16's default: 30 s). Shorter here, so a replica
 * started again is back within seconds; not so short that a busy machine's pause drops a live one.
 */
const ZOOKEEPER_SESSION_MS = 6_000;

/** Whether ZooKeeper can be started here (Debian's `zookeeper`, which ReplicatedMergeTree needs on 18.16: no Keeper before 21.8). */
export const zookeeperAvailable = () => existsSync(ZOOKEEPER_JAR) && existsSync(JAVA_BIN);

/**
 * One ZooKeeper server (standalone: enough for trying replication, not for surviving its own
 * loss) on loopback `port`, data in DIR/zookeeper, its admin web server off.
 */
export async function startZooKeeper(dir: string, port: number, log: string): Promise<{ started: Started }> {
  const home = join(dir, 'zookeeper');
  mkdirSync(join(home, 'data'), { recursive: true });
  const config = join(home, 'zoo.cfg');
  writeFileSync(config, [`tickTime=2000`, `dataDir=${home}/data`, `clientPort=${port}`, 'clientPortAddress=127.0.0.1', 'admin.enableServer=false', '4lw.commands.whitelist=ruok'].join('\n') + '\n');
  const argv = [JAVA_BIN, `-Dzookeeper.log.dir=${home}`, '-cp', ZOOKEEPER_JAR, 'org.apache.zookeeper.server.ZooKeeperServerMain', config];
  const started = startDetached(argv, { log, cwd: home });
  await waitUntil('ZooKeeper', () => zookeeperAnswers(port), () => isAlive(started.pid), 30_000, log);
  return { started };
}

/** ZooKeeper's "are you ok" four-letter command answered "imok". */
export function zookeeperAnswers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    let answer = '';
    const socket = connect({ host: '127.0.0.1', port }, () => socket.end('ruok'));
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer === 'imok'));
    socket.on('error', () => resolve(false));
  });
}

/**
 * A ClickHouse server's directory as it starts from (`config.xml`, `users.xml`, its data
 * folders): listening on loopback on `own`, knowing `shards` as the `hogbase_events` cluster
 * (none: a standalone server; a shard of several servers: its replicas, which replicate their
 * inserts themselves, `internal_replication`), and with `replication`, its ZooKeeper and macros.
 * Tests start their server from the same files.
 */
export function writeClickHouseHome(home: string, own: ClickHousePorts, shards: readonly Shard[], replication?: ClickHouseReplication): void {
  for (const sub of ['data', 'tmp', 'user_files', 'format_schemas']) mkdirSync(join(home, sub), { recursive: true });
  writeFileSync(join(home, 'config.xml'), clickhouseConfig(home, own, shards, replication));
  writeFileSync(join(home, 'users.xml'), CLICKHOUSE_USERS);
}

/**
 * ClickHouse server `index` (data in DIR/clickhouse-INDEX) on its ports, knowing every server as a
 * shard of the `hogbase_events` cluster (so the events table can be Distributed over them).
 */
export async function startClickHouse(dir: string, index: number, shards: readonly ClickHousePorts[], log: string, options: { standalone?: boolean } = {}): Promise<{ started: Started; url: string }> {
  const home = join(dir, `clickhouse-${index}`);
  const own = shards[index]!;
  // Standalone (one embedded server's events, the ingest bench): a plain events table, no cluster.
  writeClickHouseHome(home, own, options.standalone ? [] : shards);
  const started = startDetached([CLICKHOUSE_BIN, `--config-file=${join(home, 'config.xml')}`], { log, cwd: home });
  await waitUntil(`ClickHouse ${index}`, () => clickhouseAnswers(own.http), () => isAlive(started.pid), 30_000, join(home, 'error.log'));
  return { started, url: `clickhouse://default@127.0.0.1:${own.http}/hogbase` };
}

/** One shard of the cluster: a server, or its replicas. */
export type Shard = ClickHousePorts | readonly ClickHousePorts[];

function shardXml(shard: Shard): string {
  const replicas = Array.isArray(shard) ? shard : [shard as ClickHousePorts];
  // Replicated tables copy an insert to the other replicas: the Distributed table writes one.
  const internal = replicas.length > 1 ? '<internal_replication>true</internal_replication>' : '';
  return `      <shard>${internal}${replicas.map((r) => `<replica><host>127.0.0.1</host><port>${r.tcp}</port></replica>`).join('')}</shard>`;
}

const replicationXml = (r: ClickHouseReplication) => `  <interserver_http_host>127.0.0.1</interserver_http_host>
  <interserver_http_port>${r.interserverPort}</interserver_http_port>
  <zookeeper><node><host>127.0.0.1</host><port>${r.zookeeperPort}</port></node><session_timeout_ms>${ZOOKEEPER_SESSION_MS}</session_timeout_ms></zookeeper>
  <macros><shard>${r.shard}</shard><replica>${r.replica}</replica></macros>
`;

const clickhouseConfig = (home: string, own: ClickHousePorts, shards: readonly Shard[], replication?: ClickHouseReplication) => `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${home}/server.log</log><errorlog>${home}/error.log</errorlog><console>0</console></logger>
  <http_port>${own.http}</http_port>
  <tcp_port>${own.tcp}</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <max_connections>256</max_connections>
  <max_concurrent_queries>64</max_concurrent_queries>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <path>${home}/data/</path>
  <tmp_path>${home}/tmp/</tmp_path>
  <user_files_path>${home}/user_files/</user_files_path>
  <format_schema_path>${home}/format_schemas/</format_schema_path>
  <users_config>${home}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
${shards.length === 0 ? '' : `  <remote_servers>
    <${EVENTS_CLUSTER}>
${shards.map(shardXml).join('\n')}
    </${EVENTS_CLUSTER}>
  </remote_servers>
`}${replication ? replicationXml(replication) : ''}</yandex>
`;

const CLICKHOUSE_USERS = `<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
`;
