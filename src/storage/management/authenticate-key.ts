import { hashSecret } from '../../ids';
import type { Tx } from '../db';
import { toUser } from './management-rows';
import type { Principal } from './types';

/** An engine's statements for resolving a personal API key, in its own SQL and placeholders. */
export interface KeyStatements {
  /** The unrevoked key whose hash is bound: its id as `key_id`, beside its user's columns. */
  keyAndUser: string;
  /** The memberships (`organization_id`, `level`) of the user whose id is bound. */
  memberships: string;
  /** Binds the time, then the key's id. */
  recordUse: string;
}

/** The key's user and their memberships, or null when the key is unknown or revoked; its last use is recorded. */
export async function authenticateKey(q: Tx, statements: KeyStatements, secret: string): Promise<Principal | null> {
  const rows = await q.query(statements.keyAndUser, [hashSecret(secret)]);
  if (!rows.length) return null;
  const user = toUser(rows[0]);
  const keyId = String(rows[0].key_id);
  const memberships = await q.query<{ organization_id: string; level: number }>(statements.memberships, [user.id]);
  // Recording the last use must never fail or slow the request it belongs to.
  void q.run(statements.recordUse, [new Date(), keyId]).catch(() => undefined);
  return { user, keyId, memberships: new Map(memberships.map((m) => [String(m.organization_id), Number(m.level)])) };
}
