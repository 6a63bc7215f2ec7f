import { describeAccount } from '../bootstrap';
import { isAppError } from '../errors';
import { BackupError, type Storage } from '../storage';

/**
 * The operator commands, each run against an open Storage: the CLI's own (server stopped) or the
 * running server's, reached over its control socket (`control-socket.ts`). They print through
 * `out` and fail with UsageError for what the operator can fix.
 */
export type Flags = Record<string, string | string[] | boolean | undefined>;
export type Command = (s: Storage, f: Flags, out: (text: string) => void, args: string[]) => Promise<void>;

export class UsageError extends Error {}

const need = (flags: Flags, name: string): string => {
  const v = flags[name];
  if (typeof v !== 'string' || !v) throw new UsageError(`--${name} is required`);
  return v;
};

const first = (v: unknown): string | undefined => (Array.isArray(v) ? v[0] : typeof v === 'string' ? v : undefined);

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

async function findUser(s: Storage, email: string) {
  const user = await s.management.findUserByEmail(email);
  if (!user) throw new UsageError(`no user with e-mail ${email}`);
  return user;
}

export const COMMANDS: Record<string, Command> = {
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
  async 'list-users'(s, f, out) {
    const users = (await s.management.listUsers()).map((u) => ({
      id: u.id,
      email: u.email,
      first_name: u.firstName,
      date_joined: u.createdAt.toISOString(),
      organizations: u.organizationNames,
      active_keys: u.activeKeys,
    }));
    out(f.json ? JSON.stringify(users) : users.map((u) => `${u.id}  ${u.email}  ${u.organizations.join(', ')}  ${u.active_keys} key(s)`).join('\n') || '(no users)');
  },
  async backup(s, f, out) {
    const to = need(f, 'to');
    const summary = await s.backup(to);
    out(f.json ? JSON.stringify({ to, ...summary }) : `backup written to ${to}: the database and ${summary.files} event files (${summary.bytes} bytes)`);
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

/**
 * Run one command; what it printed and its exit status: 2 for what the operator can fix (usage,
 * a backup directory that is not empty), 1 refused by the service. The same in the CLI's own
 * process and in the server's, over the control socket.
 */
export async function runCommand(storage: Storage, command: string, flags: Flags, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const lines: string[] = [];
  try {
    await COMMANDS[command](storage, flags, (text) => lines.push(text), args);
    return { code: 0, stdout: lines.map((l) => `${l}\n`).join(''), stderr: '' };
  } catch (error) {
    const stdout = lines.map((l) => `${l}\n`).join('');
    if (error instanceof UsageError || error instanceof BackupError) return { code: 2, stdout, stderr: `${error.message}\n` };
    if (isAppError(error)) return { code: 1, stdout, stderr: `${error.detail}\n` };
    throw error;
  }
}
