import { existsSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Logger } from '../logger';
import type { Storage } from '../storage';
import { COMMANDS, runCommand, type Flags } from './commands';

/**
 * The running server's door for the operator CLI: a unix socket in DATA_DIR, owner-only,
 * so it admits exactly who could read the database files anyway; never a TCP port. DuckDB lets
 * one process open the database, so without it every CLI command needed the server stopped.
 * One request, `POST /run {command, flags, args}`, runs a CLI command against the server's open
 * storage and answers what the command printed and its exit status.
 */
export const CONTROL_SOCKET = 'control.sock';

/**
 * Unix socket paths are limited (108 bytes on Linux, 104 on macOS). The limit is checked on the
 * absolute path, which is what the CLI connects to from wherever it runs: a relative DATA_DIR
 * short enough to bind could still be out of every client's reach.
 */
const MAX_SOCKET_PATH = 100;

/**
 * The umask the socket is made under: owner-only (no access for group or others) from the moment
 * it exists, where a chmod after listening would leave a moment in which anyone could connect.
 * The umask is the process's, so files and directories other threads make meanwhile come out
 * owner-only too, which they may (they are in DATA_DIR); it keeps the owner's execute bit, so
 * such a directory stays usable.
 */
const SOCKET_UMASK = 0o077;

export interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function controlSocketPath(dataDir: string): string | null {
  const path = join(resolve(dataDir), CONTROL_SOCKET);
  return Buffer.byteLength(path) <= MAX_SOCKET_PATH ? path : null;
}

/** Listen on DATA_DIR's control socket; returns how to stop (the socket file is removed). */
export function serveControlSocket(dataDir: string, storage: Storage, logger: Logger): () => void {
  const path = controlSocketPath(dataDir);
  if (!path) {
    logger.warn('DATA_DIR path too long for a control socket: CLI commands need the server stopped', { dataDir });
    return () => undefined;
  }
  // Left over from a crash: this process holds the database, so no other server uses it.
  rmSync(path, { force: true });
  const umask = process.umask(SOCKET_UMASK);
  let server: ReturnType<typeof Bun.serve>;
  try {
    server = listen(path, storage, logger);
  } finally {
    process.umask(umask);
  }
  return () => {
    server.stop(true);
    rmSync(path, { force: true });
  };
}

function listen(path: string, storage: Storage, logger: Logger) {
  return Bun.serve({
    unix: path,
    async fetch(request, server) {
      // A backup answers when its copy is done, which may take minutes: no idle cut-off.
      server.timeout(request, 0);
      if (request.method !== 'POST' || new URL(request.url).pathname !== '/run') return new Response('not found', { status: 404 });
      const { command, flags, args } = (await request.json()) as { command: string; flags: Flags; args: string[] };
      if (!Object.hasOwn(COMMANDS, command)) return Response.json({ code: 2, stdout: '', stderr: `Unknown command: ${command}\n` } satisfies CommandResult);
      logger.info('operator command', { command });
      try {
        return Response.json(await runCommand(storage, command, flags ?? {}, args ?? []));
      } catch (error) {
        logger.error('operator command failed', { command, error });
        return Response.json({ code: 1, stdout: '', stderr: `${command} failed: ${error instanceof Error ? error.message : String(error)}\n` } satisfies CommandResult);
      }
    },
  });
}

/**
 * Run a command in the server holding DATA_DIR, if one answers on its socket; null when none
 * does (no socket, or one left by a crash), and the caller opens the database itself.
 */
export async function callControlSocket(dataDir: string, command: string, flags: Flags, args: string[]): Promise<CommandResult | null> {
  const path = controlSocketPath(dataDir);
  if (!path || !existsSync(path)) return null;
  let response: Response;
  try {
    response = await fetch('http://control/run', { unix: path, method: 'POST', body: JSON.stringify({ command, flags, args }), headers: { 'content-type': 'application/json' } });
  } catch {
    return null;
  }
  return (await response.json()) as CommandResult;
}
