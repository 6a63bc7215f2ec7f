import { uuidv4 } from '../../ids';
import type { Database, Row } from '../db';
import type { Invite, InviteStore } from './types';

export const toInvite = (r: Row): Invite => ({
  id: String(r.id),
  organizationId: String(r.organization_id),
  targetEmail: String(r.target_email),
  firstName: String(r.first_name),
  message: (r.message as string | null) ?? null,
  level: Number(r.level),
  emailingAttemptMade: Boolean(r.emailing_attempt_made),
  createdBy: r.created_by == null ? null : Number(r.created_by),
  createdAt: r.created_at as Date,
  updatedAt: r.updated_at as Date,
});

const COLUMNS = 'id::VARCHAR AS id, organization_id::VARCHAR AS organization_id, target_email, first_name, message, level, emailing_attempt_made, created_by, created_at, updated_at';

export function createInviteStore(db: Database): InviteStore {
  return {
    async listInvites(organizationId, page) {
      const where = 'organization_id = TRY_CAST(? AS UUID)';
      const [{ n }] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM organization_invites WHERE ${where}`, [organizationId]);
      const rows = await db.query(`SELECT ${COLUMNS} FROM organization_invites WHERE ${where} ORDER BY created_at DESC, id LIMIT ? OFFSET ?`, [
        organizationId,
        page.limit,
        page.offset,
      ]);
      return { count: n, results: rows.map(toInvite) };
    },

    createInvites: (organizationId, inputs, createdBy, now) =>
      db.transaction(async (tx) => {
        const created: Invite[] = [];
        for (const input of inputs) {
          await tx.run('DELETE FROM organization_invites WHERE organization_id = ? AND lower(target_email) = lower(?)', [
            organizationId,
            input.targetEmail,
          ]);
          const rows = await tx.query(
            `INSERT INTO organization_invites (id, organization_id, target_email, first_name, message, level, created_by, created_at, updated_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`,
            [uuidv4(), organizationId, input.targetEmail, input.firstName, input.message, input.level, createdBy, now, now],
          );
          created.push(toInvite(rows[0]));
        }
        // A later invite in the same request replaced an earlier one for the same address.
        const kept = new Set((await tx.query<{ id: string }>(`SELECT id::VARCHAR AS id FROM organization_invites WHERE organization_id = ?`, [organizationId])).map((r) => r.id));
        return created.filter((invite) => kept.has(invite.id));
      }),

    async deleteInvite(organizationId, id) {
      const where = 'id = TRY_CAST(? AS UUID) AND organization_id = TRY_CAST(? AS UUID)';
      const [{ n }] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM organization_invites WHERE ${where}`, [id, organizationId]);
      if (!n) return false;
      await db.run(`DELETE FROM organization_invites WHERE ${where}`, [id, organizationId]);
      return true;
    },
  };
}
