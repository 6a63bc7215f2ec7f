import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'chdb';
import { namesOfThisFile, processWideSync } from './process-wide';
import { launchWatched } from './watchdog';

/**
 * chDB (modern ClickHouse in process) allows one data directory per process, and a test process
 * runs many test files: every chDB user of the tests in a process shares this directory (its
 * path kept process-wide: see process-wide.ts), each in a database of its own. A watchdog (with
 * nothing to watch but time) removes the directory once the process is gone: nothing runs when
 * bun test ends.
 */
const sessionName = namesOfThisFile('fixture');
let path: string | null = null;

export function chdbPath(): string {
  path ??= processWideSync('chdb-path', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hogbase-chdb-'));
    launchWatched({ name: 'chdb', dir, argv: ['sleep', '86400'], log: '/dev/null', signal: 'KILL' });
    return join(dir, 'data');
  });
  return path;
}

/** A chDB session whose current database is a new, empty one (unqualified names land there). */
export function chdbSession(): Session {
  const session = new Session(chdbPath());
  const database = sessionName();
  session.query(`CREATE DATABASE ${database}`);
  session.query(`USE ${database}`);
  return session;
}
