import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The Debian ClickHouse server (18.16) started from its binary for one test file: its own temp
 * directory, loopback ports chosen free, stopped by its PID. Null where the package is not
 * installed (`apt-get install clickhouse-server clickhouse-client`), so the caller can skip.
 */
const BINARY = '/usr/sbin/clickhouse-server';
const CONFIG = '/etc/clickhouse-server/config.xml';

export const clickhouseServerInstalled = existsSync(BINARY) && existsSync(CONFIG);

export interface ClickHouseServer {
  /** Runs one statement over HTTP; the body as text, or throws with the server's message. */
  query(sql: string, settings?: Record<string, string>): Promise<string>;
  stop(): Promise<void>;
}

function freePort(): number {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } });
  const { port } = server;
  server.stop(true);
  return port;
}

export async function startClickHouseServer(): Promise<ClickHouseServer> {
  const dir = await mkdtemp(join(tmpdir(), 'hogbase-ch18-'));
  const http = freePort();
  const config = (await readFile(CONFIG, 'utf8'))
    .replaceAll('/var/lib/clickhouse/', `${dir}/`)
    .replaceAll('/var/log/clickhouse-server/', `${dir}/`)
    .replace('<http_port>8123</http_port>', `<http_port>${http}</http_port>`)
    .replace('<tcp_port>9000</tcp_port>', `<tcp_port>${freePort()}</tcp_port>`)
    .replace('<interserver_http_port>9009</interserver_http_port>', `<interserver_http_port>${freePort()}</interserver_http_port>`)
    .replace('<listen_host>::1</listen_host>', '');
  await writeFile(join(dir, 'config.xml'), config);
  await copyFile(join(CONFIG, '..', 'users.xml'), join(dir, 'users.xml'));
  const proc = Bun.spawn([BINARY, `--config-file=${join(dir, 'config.xml')}`], { cwd: dir, stdout: 'ignore', stderr: 'ignore' });

  const query = async (sql: string, settings: Record<string, string> = {}) => {
    const response = await fetch(`http://127.0.0.1:${http}/?${new URLSearchParams(settings)}`, { method: 'POST', body: sql });
    const text = await response.text();
    if (!response.ok) throw new Error(text.trim());
    return text;
  };
  const stop = async () => {
    proc.kill('SIGKILL');
    await proc.exited;
    await rm(dir, { recursive: true, force: true });
  };

  for (let attempt = 0; attempt < 200; attempt++) {
    if (proc.exitCode !== null) break;
    try {
      await query('SELECT 1');
      return { query, stop };
    } catch {
      await Bun.sleep(50);
    }
  }
  await stop();
  throw new Error('the ClickHouse server did not start');
}
