import { joinSql, sql, trusted, type SqlFragment } from '../../core/query';
import { AppError } from '../../errors';
import type { PersonMatch } from '../events/tiers/erasure';
import type { ClickHouse } from './client';
import { EVENT_TABLES } from './schema';

/**
 * A person's events deleted from ClickHouse's `events` table and its person-ordered copy (the GDPR right to erasure, with
 * EVENTS_STORE on an embedded server; storage/erasure.ts runs it as a step of its job, after the
 * store's log is loaded). ClickHouse deletes through a mutation, which rewrites the parts holding
 * the rows in the background; the call returns only once it is applied, so no read (FINAL or
 * not) returns the rows after it. A modern server waits itself (`mutations_sync`); 18.16 cannot
 * be asked to, so `system.mutations` is polled, a bounded number of times.
 */

/** How the wait on a server without `mutations_sync` paces itself: a sleep (tests pass their own), and the most it sleeps in all. */
export interface MutationWait {
  sleep(ms: number): Promise<void>;
  /** Total sleep after which the wait gives up (the mutation goes on in ClickHouse). */
  maxWaitMs: number;
}

/**
 * On 18.16 a mutation rewrites every part of the table (a measured second or so for a few
 * thousand rows here, minutes on a large table): a minute, as the erasure's wait for the log.
 */
export const MUTATION_WAIT: MutationWait = { sleep: (ms) => Bun.sleep(ms), maxWaitMs: 60_000 };

/** First pause between two looks at `system.mutations`; doubled up to the last. */
const FIRST_POLL_MS = 20;
const LAST_POLL_MS = 1_000;

/**
 * The rows of the person, values bound. `toString(person_id)`: comparing the Nullable(UUID) column
 * with `toUUID(…)` made 18.16's mutation fail (and stay queued) where the text form works on both;
 * a row with no person id gives NULL there, which neither deletes it nor hides a distinct id match.
 */
function personRows(ch: ClickHouse, teamId: number, match: PersonMatch): SqlFragment {
  const d = ch.dialect;
  const list = (values: readonly string[]) => joinSql(values.map((v) => d.bind(v)), ', ');
  const parts: SqlFragment[] = [];
  if (match.distinctIds.length) parts.push(sql`distinct_id IN (${list(match.distinctIds)})`);
  if (match.personIds.length) parts.push(sql`toString(person_id) IN (${list(match.personIds)})`);
  return sql`team_id = ${d.bind(teamId)} AND (${parts.length ? joinSql(parts, ' OR ') : trusted('0')})`;
}

/**
 * Delete every row of the person (any copy of a row a retried load wrote twice included);
 * returns how many rows there were. Nothing to delete issues no mutation (on 18.16 one rewrites
 * the whole table). Throws AppError 'unavailable' when 18.16 has not applied the mutation within
 * `wait` (it goes on there; running this again later is harmless).
 */
export async function deletePersonEvents(ch: ClickHouse, teamId: number, match: PersonMatch, wait: MutationWait = MUTATION_WAIT): Promise<number> {
  if (!Number.isSafeInteger(teamId)) throw new AppError('invalid_input', 'Invalid project id.', 'team_id');
  const where = personRows(ch, teamId, match);
  const [counted] = await ch.query<{ n: string | number }>(sql`SELECT count() AS n FROM ${trusted(ch.table('events'))} WHERE ${where}`);
  const rows = Number(counted?.n ?? 0);
  if (rows === 0) return 0;
  for (const name of EVENT_TABLES) {
    const table = trusted(ch.table(name));
    if (ch.features.mutationsSync) {
      await ch.command(sql`ALTER TABLE ${table} DELETE WHERE ${where} SETTINGS mutations_sync = 1`);
      continue;
    }
    await ch.command(sql`ALTER TABLE ${table} DELETE WHERE ${where}`);
    await awaitMutations(ch, name, wait);
  }
  return rows;
}

/**
 * Wait until the mutations of `table` pending right after ours are done: ours is among them,
 * and those before it are applied first to each part anyway (18.16 tells no statement its
 * mutation's id). 18.16 keeps retrying a mutation that fails and says nothing of why, so a
 * failure shows as this wait running out.
 */
async function awaitMutations(ch: ClickHouse, table: string, wait: MutationWait): Promise<void> {
  const [database, name] = ch.table(table).split('.') as [string, string];
  const d = ch.dialect;
  const pending = async () =>
    (await ch.query<{ id: string }>(sql`SELECT mutation_id AS id FROM system.mutations WHERE database = ${d.bind(database)} AND table = ${d.bind(name)} AND is_done = 0`)).map((r) => r.id);
  let ours = new Set(await pending());
  let slept = 0;
  for (let pause = FIRST_POLL_MS; ours.size > 0; pause = Math.min(LAST_POLL_MS, pause * 2)) {
    if (slept >= wait.maxWaitMs) {
      throw new AppError(
        'unavailable',
        "The events database has not finished deleting the person's events yet: the deletion goes on there, and is checked again at the next start.",
      );
    }
    const step = Math.min(pause, wait.maxWaitMs - slept);
    await wait.sleep(step);
    slept += step;
    const still = new Set(await pending());
    ours = new Set([...ours].filter((id) => still.has(id)));
  }
}
