import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchWatched } from './watchdog';

/**
 * One value for the whole test process, whichever file asks first: a server's port, chDB's data
 * directory. `bun test --parallel` runs each file of a worker process in a fresh global, with its
 * own module state and its own copy of the environment, so the values are kept in files of a
 * directory named after the process (its id and start time: never another process's), removed
 * by a watchdog once the process is gone, as the servers are stopped.
 */
const stat = readFileSync('/proc/self/stat', 'utf8');
// Fields after the command name (which may hold ") "): the start time is the 20th of them.
const registry = join(tmpdir(), `hogbase-test-${process.pid}-${stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[19]}`);

function entry(name: string): string {
  if (!existsSync(registry)) {
    mkdirSync(registry);
    launchWatched({ name: 'registry', dir: registry, argv: ['sleep', '86400'], log: '/dev/null', signal: 'KILL' });
  }
  return join(registry, name);
}

const held = (name: string): string | null => {
  const path = entry(name);
  return existsSync(path) ? readFileSync(path, 'utf8') : null;
};
const keep = (name: string, value: string): string => {
  writeFileSync(entry(name), value);
  return value;
};

/** The value made by the first caller of the process (the files of a process run one after another). */
export async function processWide(name: string, make: () => Promise<string>): Promise<string> {
  return held(name) ?? keep(name, await make());
}

export function processWideSync(name: string, make: () => string): string {
  return held(name) ?? keep(name, make());
}

/**
 * Names made on a shared server (databases) by this file: the process id and a tag of this
 * file's own, so that the files of one process never take the same name.
 */
export const namesOfThisFile = (prefix: string): (() => string) => {
  const tag = randomBytes(4).toString('hex');
  let n = 0;
  return () => `${prefix}_${process.pid}_${tag}_${++n}`;
};

/**
 * A new directory for a test's files (a server's data, a backup), inside this process's
 * directory: the watchdog removes it with the rest once the process is gone, whether or not the
 * test that made it cleaned up (many leave a stopped server's data to be read after it).
 */
export const processTempDir = (prefix: string): Promise<string> => mkdtemp(entry(prefix));
