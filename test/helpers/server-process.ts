import { join, resolve } from 'node:path';
import type { Subprocess } from 'bun';
import { processTempDir } from './process-wide';

export const ROOT = resolve(import.meta.dir, '../..');
export const TEST_KEYS = {
  email: 'e2e@example.com',
  personal: 'phx_e2eTestPersonalKey0000000000000000000000',
  project: 'phc_e2eTestProjectKey00000000000000000000000',
};

export interface ServerProcess {
  url: string;
  port: number;
  dataDir: string;
  proc: Subprocess<'ignore', 'pipe', 'pipe'>;
  /** Everything the process printed to stdout so far. */
  output(): string;
  stop(signal?: NodeJS.Signals): Promise<number>;
}

export const newDataDir = () => processTempDir('analytics-server-');

/**
 * Start the real server (`bun src/index.ts`, or `command`, e.g. the README's `npm start`) on a
 * free loopback port and wait until it listens; in `cwd` (the repository unless given), where
 * a relative `dataDir` is.
 */
export async function startServer(env: Record<string, string> = {}, dataDir?: string, command: string[] = [process.execPath, join(ROOT, 'src/index.ts')], cwd = ROOT): Promise<ServerProcess> {
  const dir = dataDir ?? (await newDataDir());
  const proc = Bun.spawn(command, {
    cwd,
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      BOOTSTRAP_EMAIL: TEST_KEYS.email,
      BOOTSTRAP_PERSONAL_API_KEY: TEST_KEYS.personal,
      BOOTSTRAP_PROJECT_API_KEY: TEST_KEYS.project,
      ...env,
    },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  let out = '';
  const decoder = new TextDecoder();
  const reader = proc.stdout.getReader();
  const deadline = Date.now() + 20_000;
  let port = 0;
  // One read stays pending across timeouts, so no chunk is ever dropped.
  let pending = reader.read();
  while (!port) {
    if (Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
    const chunk = await Promise.race([pending, Bun.sleep(200).then(() => null)]);
    if (!chunk) continue;
    if (chunk.done) throw new Error(`server exited before listening:\n${out}\n${await new Response(proc.stderr).text()}`);
    out += decoder.decode(chunk.value);
    pending = reader.read();
    const m = /Listening on http:\/\/[^:]+:(\d+)/.exec(out);
    if (m) port = Number(m[1]);
  }
  // Keep draining stdout so the child never blocks on a full pipe.
  void (async () => {
    for (;;) {
      const { done, value } = await pending;
      pending = reader.read();
      if (done) break;
      out += decoder.decode(value);
    }
  })();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dataDir: dir,
    proc,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      proc.kill(signal);
      return proc.exited;
    },
  };
}

/** Run the operator CLI as a separate process, in `cwd` (the repository unless given). */
export async function runCliProcess(args: string[], dataDir: string, cwd = ROOT, env: Record<string, string> = {}) {
  const proc = Bun.spawn([process.execPath, join(ROOT, 'src/cli/index.ts'), ...args], {
    cwd,
    env: { ...process.env, DATA_DIR: dataDir, ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  return { stdout, stderr, code };
}
