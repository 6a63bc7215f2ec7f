import { uuidv4 } from '../../ids';
import { toInvite } from '../invites/invite-store';
import type { Invite, InviteStore } from '../invites/types';
import { isUuid, type Pg } from './client';

/** Organization invites in PostgreSQL (the DuckDB store's answers; invites/invite-store.ts). */

const COLUMNS = 'id::text AS id, organization_id::text AS organization_id, target_email, first_name, message, level, emailing_attempt_made, created_by, created_at, updated_at';

export function createPostgresInviteStore(pg: Pg): InviteStore {
  return {
    async listInvites(organizationId, page) {
      if (!isUuid(organizationId)) return { count: 0, results: [] };
      const [{ n }] = await pg.query<{ n: string }>('SELECT count(*) AS n FROM organization_invites WHERE organization_id = $1', [organizationId]);
      const rows = await pg.query(`SELECT ${COLUMNS} FROM organization_invites WHERE organization_id = $1 ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`, [
        organizationId,
        page.limit,
        page.offset,
      ]);
      return { count: Number(n), results: rows.map(toInvite) };
    },

    createInvites: (organizationId, inputs, createdBy, now) =>
      pg.transaction(async (tx) => {
        const created: Invite[] = [];
        for (const input of inputs) {
          await tx.run('DELETE FROM organization_invites WHERE organization_id = $1 AND lower(target_email) = lower($2)', [organizationId, input.targetEmail]);
          const [row] = await tx.query(
            `INSERT INTO organization_invites (id, organization_id, target_email, first_name, message, level, created_by, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ${COLUMNS}`,
            [uuidv4(), organizationId, input.targetEmail, input.firstName, input.message, input.level, createdBy, now, now],
          );
          created.push(toInvite(row));
        }
        // A later invite in the same request replaced an earlier one for the same address.
        const kept = new Set((await tx.query<{ id: string }>('SELECT id::text AS id FROM organization_invites WHERE organization_id = $1', [organizationId])).map((r) => r.id));
        return created.filter((invite) => kept.has(invite.id));
      }),

    async deleteInvite(organizationId, id) {
      if (!isUuid(organizationId) || !isUuid(id)) return false;
      const deleted = await pg.query('DELETE FROM organization_invites WHERE id = $1 AND organization_id = $2 RETURNING id', [id, organizationId]);
      return deleted.length > 0;
    },
  };
}
