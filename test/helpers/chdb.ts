import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'chdb';
import { launchWatched } from './watchdog';

/**
 * chDB (modern ClickHouse in process) allows one data directory per process, and bun test runs
 * every test file in one process: every chDB user of the tests shares this directory, each in a
 * database of its own. A watchdog (with nothing to watch but time) removes the directory once the
 * process is gone: nothing runs when bun test ends.
 */
let path: string | null = null;
let sessions = 0;

export function chdbPath(): string {
  if (path) return path;
  const dir = mkdtempSync(join(tmpdir(), 'hogbase-chdb-'));
  launchWatched({ name: 'chdb', dir, argv: ['sleep', '86400'], log: '/dev/null', signal: 'KILL' });
  path = join(dir, 'data');
  return path;
}

/** A chDB session whose current database is a new, empty one (unqualified names land there). */
export function chdbSession(): Session {
  const session = new Session(chdbPath());
  const database = `fixture_${process.pid}_${++sessions}`;
  session.query(`CREATE DATABASE ${database}`);
  session.query(`USE ${database}`);
  return session;
}
