import { accessSync, constants, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { expectedValue, type Config } from './config';

/**
 * What the machine must allow before the server creates anything (the data directory, the
 * database, the first start's keys): the address can be bound and DATA_DIR can be written.
 * Checked first, so a bad HOST or DATA_DIR leaves nothing behind, and a taken port is refused
 * rather than shared by surprise: Bun's listen (through Elysia) sets SO_REUSEPORT, with which a
 * second server on the same port started and the kernel split requests between the two.
 */
export interface Preflight {
  /** Settings the machine cannot honour, one line each (as config errors are). */
  problems: string[];
  /** Set when another process listens on HOST:PORT and REUSE_PORT is off. */
  portTaken: string | null;
}

export function preflight(config: Config): Preflight {
  const problems: string[] = [];
  let portTaken: string | null = null;
  // A writer (ROLE=writer) listens on nothing.
  const bind = config.ROLE === 'writer' ? null : probeBind(config.HOST, config.PORT);
  if (bind === 'in_use' && config.REUSE_PORT === 'off') portTaken = portTakenMessage(config);
  else if (bind !== null && bind !== 'in_use') problems.push(`HOST: cannot listen on ${JSON.stringify(config.HOST)} (${bind}); expected an address of this machine, ${expectedValue('HOST')}`);
  const dataDir = checkDataDir(config.DATA_DIR);
  if (dataDir) problems.push(`DATA_DIR: ${dataDir}; expected a writable directory (made if missing), such as ./data`);
  return { problems, portTaken };
}

export const portTakenMessage = (config: Config) =>
  `Port ${config.PORT} on ${config.HOST} is in use by another process: stop it or choose another PORT (REUSE_PORT=on shares the port deliberately).`;

/** Bind and release at once, without SO_REUSEPORT (so any listener counts); null when it binds. */
function probeBind(hostname: string, port: number): 'in_use' | string | null {
  try {
    Bun.serve({ hostname, port, reusePort: false, fetch: () => new Response(null) }).stop(true);
    return null;
  } catch (error) {
    const code = (error as { code?: string }).code;
    return code === 'EADDRINUSE' ? 'in_use' : (code ?? String(error));
  }
}

/** Why DATA_DIR cannot be used, or null: it (or, when missing, its nearest existing parent) must be a writable directory. */
function checkDataDir(dir: string): string | null {
  let path = resolve(dir);
  for (;;) {
    try {
      if (!statSync(path).isDirectory()) return `${JSON.stringify(path)} is not a directory`;
      accessSync(path, constants.W_OK | constants.X_OK);
      return null;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') return `${JSON.stringify(path)} is not writable`;
      if (code !== 'ENOENT' || dirname(path) === path) return `${JSON.stringify(path)}: ${code ?? String(error)}`;
      path = dirname(path);
    }
  }
}
