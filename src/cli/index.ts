import { parseArgs } from 'node:util';
import { resolve } from 'node:path';
import { ConfigError, loadConfig } from '../config';
import { BackupError, DatabaseLockedError, MetaStoreUnreachableError, NewerDatabaseError, openStorage, restoreBackup, type Storage } from '../storage';
import { withPipeline } from '../pipeline';
import { COMMANDS, UsageError, runCommand, type Flags } from './commands';
import { callControlSocket } from './control-socket';
import { runLogDlq } from './log-dlq';
import { EventLogUnreachableError, openEventLog } from '../storage/log/log-intake';
import { LogNotDurableError } from '../storage/log/redis-streams';

/**
 * Operator CLI: `npm run cli -- <command> [options]`. While the server runs, commands go to it
 * over its control socket in DATA_DIR; otherwise the CLI opens DATA_DIR itself.
 */
const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  create-user --email E --organization-name N [--personal-api-key phx_…] [--project-api-key phc_…] [--json]
      Create a user in a new organization with a project and a personal API key.
  list-users [--json]                           List the users, their organizations and how many keys they hold.
  create-key --email E [--label L] [--json]     Create a personal API key for a user.
  list-keys --email E [--json]                  List a user's personal API keys (never the secrets).
  revoke-key --id ID                            Revoke a personal API key.
  backup --to DIR [--json]                      Write a consistent copy of the data to a new or empty DIR (the server may be running).
  restore --from DIR                            Fill an empty DATA_DIR from a backup (the server must be stopped).
  dlq list [--json]                             List events acknowledged but not storable (dead letters), with the reason.
  dlq replay [--id ID ...]                      Feed dead letters (all, or the given ids) back through the write path.
      In cluster mode (EVENT_LOG set, as for ROLE=node or writer) both work on the log's dead letters in Redis:
      list shows each with its partition, entry, deliveries and reason; replay logs them again for the writers.

Every command works while the server runs (through DATA_DIR/control.sock) or with it stopped.
Environment: DATA_DIR (default ./data) selects the data directory; EVENT_LOG (with ROLE) the cluster's log for dlq.`;

const OPTIONS = {
  email: { type: 'string' },
  'organization-name': { type: 'string' },
  'personal-api-key': { type: 'string' },
  'project-api-key': { type: 'string' },
  label: { type: 'string' },
  to: { type: 'string' },
  from: { type: 'string' },
  id: { type: 'string', multiple: true },
  json: { type: 'boolean' },
} as const;

export async function runCli(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || (!Object.hasOwn(COMMANDS, command) && command !== 'restore')) {
    console.error(command && !['help', '--help'].includes(command) ? `Unknown command: ${command}\n\n${USAGE}` : USAGE);
    return command && ['help', '--help'].includes(command) ? 0 : 2;
  }
  let flags: Flags;
  let positionals: string[] = [];
  try {
    const parsed = parseArgs({ args: rest, options: OPTIONS, strict: true, allowPositionals: command === 'dlq' });
    flags = parsed.values as Flags;
    positionals = parsed.positionals;
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n\n${USAGE}`);
    return 2;
  }
  let storage: Storage | undefined;
  try {
    const config = loadConfig(env);
    if (command === 'restore') return await restore(flags, config.DATA_DIR);
    // Cluster mode: the dead letters are the log's, in Redis; no data directory is opened.
    if (command === 'dlq' && config.EVENT_LOG) return await logDlq(config.EVENT_LOG, flags, positionals);
    // Paths are the operator's, relative to here: the server runs elsewhere.
    if (typeof flags.to === 'string') flags.to = resolve(flags.to);
    const remote = await callControlSocket(config.DATA_DIR, command, flags, positionals);
    if (remote) return print(remote);
    storage = await openStorage(withPipeline({ dataDir: config.DATA_DIR, metaStore: config.META_STORE, durability: config.DURABILITY, memoryLimit: config.DUCKDB_MEMORY_LIMIT, personCopies: config.PERSON_COPIES === 'on', defaultRetentionDays: config.EVENTS_RETENTION_DAYS }));
    return print(await runCommand(storage, command, flags, positionals));
  } catch (error) {
    if (error instanceof DatabaseLockedError) {
      console.error(`The server is running on this data directory and holds its database, and it did not answer on DATA_DIR/control.sock. Stop the server, then run the command again.`);
      return 75;
    }
    if (error instanceof MetaStoreUnreachableError || error instanceof EventLogUnreachableError || error instanceof LogNotDurableError) {
      console.error(error.message);
      return 1;
    }
    if (error instanceof UsageError || error instanceof ConfigError || error instanceof BackupError || error instanceof NewerDatabaseError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  } finally {
    await storage?.close();
  }
}

async function logDlq(url: string, flags: Flags, positionals: string[]): Promise<number> {
  const log = await openEventLog(url);
  try {
    await runLogDlq(log, flags, positionals, (text) => console.log(text));
    return 0;
  } finally {
    log.close();
  }
}

/** Not through the server: restoring replaces what a server would be running on. */
async function restore(flags: Flags, dataDir: string): Promise<number> {
  if (typeof flags.from !== 'string' || !flags.from) throw new UsageError('--from is required');
  await restoreBackup(resolve(flags.from), dataDir);
  console.log(`restored ${dataDir} from ${resolve(flags.from)}; start the server on it`);
  return 0;
}

function print(result: { code: number; stdout: string; stderr: string }): number {
  if (result.stdout) process.stdout.write(result.stdout);
  if (result.stderr) process.stderr.write(result.stderr);
  return result.code;
}

if (import.meta.main) process.exit(await runCli(process.argv.slice(2)));
