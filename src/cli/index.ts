import { parseArgs } from 'node:util';
import { describeAccount } from '../bootstrap';
import { ConfigError, loadConfig } from '../config';
import { DatabaseLockedError, openStorage, type Storage } from '../storage';
import { withPipeline } from '../pipeline';

/**
 * Operator CLI: `npm run cli -- <command> [options]`. Works on DATA_DIR directly, so the server
 * must be stopped (DuckDB allows one process per database file); it says so when it is not.
 */
const USAGE = `Usage: npm run cli -- <command> [options]

Commands:
  create-user --email E --organization-name N [--personal-api-key phx_…] [--project-api-key phc_…] [--json]
      Create a user in a new organization with a project and a personal API key.
  create-key --email E [--label L] [--json]     Create a personal API key for a user.
  list-keys --email E [--json]                  List a user's personal API keys (never the secrets).
  revoke-key --id ID                            Revoke a personal API key.
  dlq list [--json]                             List events acknowledged but not storable (dead letters), with the reason.
  dlq replay [--id ID ...]                      Feed dead letters (all, or the given ids) back through the write path.

Environment: DATA_DIR (default ./data) selects the data directory.`;

type Flags = Record<string, string | string[] | boolean | undefined>;

const OPTIONS = {
  email: { type: 'string' },
  'organization-name': { type: 'string' },
  'personal-api-key': { type: 'string' },
  'project-api-key': { type: 'string' },
  label: { type: 'string' },
  id: { type: 'string', multiple: true },
  json: { type: 'boolean' },
} as const;

class UsageError extends Error {}

const need = (flags: Flags, name: string): string => {
  const v = flags[name];
  if (typeof v !== 'string' || !v) throw new UsageError(`--${name} is required`);
  return v;
};

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export const COMMANDS: Record<string, (s: Storage, f: Flags, out: (text: string) => void, args: string[]) => Promise<void>> = {
  async dlq(s, f, out, args) {
    const sub = args[0];
    if (sub === 'list') {
      const letters = await s.events.listDeadLetters();
      out(f.json ? JSON.stringify(letters) : letters.map((d) => `${d.id}  ${d.rows} rows  ${d.createdAt}  ${d.reason}`).join('\n') || '(no dead letters)');
    } else if (sub === 'replay') {
      const ids = Array.isArray(f.id) ? f.id : undefined;
      const result = await s.events.replayDeadLetters(ids);
      await s.events.flush();
      out(f.json ? JSON.stringify(result) : `replayed ${result.replayed.length} dead letter(s), ${result.rows} rows`);
    } else throw new UsageError('dlq needs a subcommand: list or replay');
  },
  async 'create-user'(s, f, out) {
    const email = need(f, 'email');
    if (!EMAIL.test(email)) throw new UsageError(`--email: "${email}" is not an e-mail address`);
    const personalApiKey = f['personal-api-key'] as string | undefined;
    const projectApiKey = f['project-api-key'] as string | undefined;
    if (personalApiKey && !/^phx_[A-Za-z0-9_-]{8,}$/.test(personalApiKey)) throw new UsageError('--personal-api-key must look like phx_…');
    if (projectApiKey && !/^phc_[A-Za-z0-9_-]{8,}$/.test(projectApiKey)) throw new UsageError('--project-api-key must look like phc_…');
    const created = await s.management.createAccount({ email, organizationName: need(f, 'organization-name'), personalApiKey, projectApiKey });
    const info = describeAccount(created);
    out(f.json ? JSON.stringify(info) : Object.entries(info).map(([k, v]) => `${k}: ${v}`).join('\n'));
  },
  async 'create-key'(s, f, out) {
    const user = await findUser(s, need(f, 'email'));
    const key = await s.management.createPersonalApiKey(user.id, (f.label as string) || 'CLI key');
    out(f.json ? JSON.stringify({ id: key.id, personal_api_key: key.value }) : `id: ${key.id}\npersonal_api_key: ${key.value}`);
  },
  async 'list-keys'(s, f, out) {
    const user = await findUser(s, need(f, 'email'));
    const keys = (await s.management.listPersonalApiKeys(user.id)).map((k) => ({
      id: k.id,
      label: k.label,
      mask_value: k.maskValue,
      created_at: k.createdAt.toISOString(),
      last_used_at: k.lastUsedAt?.toISOString() ?? null,
      revoked: k.revokedAt !== null,
    }));
    out(f.json ? JSON.stringify(keys) : keys.map((k) => `${k.id}  ${k.mask_value}  ${k.label}${k.revoked ? '  (revoked)' : ''}`).join('\n') || '(no keys)');
  },
  async 'revoke-key'(s, f, out) {
    const id = first(f.id);
    if (!id) throw new UsageError('--id is required');
    if (!(await s.management.revokePersonalApiKey(id))) throw new UsageError(`no active key with id ${id}`);
    out(`revoked ${id}`);
  },
};

const first = (v: unknown): string | undefined => (Array.isArray(v) ? v[0] : typeof v === 'string' ? v : undefined);

async function findUser(s: Storage, email: string) {
  const user = await s.management.findUserByEmail(email);
  if (!user) throw new UsageError(`no user with e-mail ${email}`);
  return user;
}

export async function runCli(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || !COMMANDS[command]) {
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
    storage = await openStorage(withPipeline({ dataDir: config.DATA_DIR, durability: config.DURABILITY, memoryLimit: config.DUCKDB_MEMORY_LIMIT, personCopies: config.PERSON_COPIES === 'on' }));
    await COMMANDS[command](storage, flags, (text) => console.log(text), positionals);
    return 0;
  } catch (error) {
    if (error instanceof DatabaseLockedError) {
      console.error(`The server is running on this data directory and holds its database. Stop the server, then run the command again.`);
      return 75;
    }
    if (error instanceof UsageError || error instanceof ConfigError) {
      console.error(error.message);
      return 2;
    }
    if (error instanceof Error && 'detail' in error) {
      console.error(String((error as { detail: string }).detail));
      return 1;
    }
    throw error;
  } finally {
    await storage?.close();
  }
}

if (import.meta.main) process.exit(await runCli(process.argv.slice(2)));
