import { hashSecret, maskSecret, newPersonalApiKey, newProjectToken, uuidv4 } from '../../ids';
import { authenticateKey, type KeyStatements } from '../management/authenticate-key';
import { slugify, toKey, toOrganization, toProject, toUser } from '../management/management-rows';
import { MEMBERSHIP_LEVEL, type ManagementStore, type ProjectSettings } from '../management/types';
import { AppError } from '../../errors';
import { isUuid, translateUniqueViolation, type Pg, type PgTx, impossibleId } from './client';
import type { Changes } from './changes';

/**
 * Organizations, users, personal keys and projects in PostgreSQL: the same answers and errors
 * as the DuckDB store (management/management-store.ts), with the same row mappers. Every
 * write tells the other server processes (`management`), which drop their project and key caches.
 */

const PROJECT_COLUMNS = 'id, uuid::text AS uuid, organization_id::text AS organization_id, api_token, name, settings::text AS settings, ingested_event, created_at, updated_at';
const USER_COLUMNS = 'u.id, u.uuid::text AS uuid, u.distinct_id, u.first_name, u.last_name, u.email, u.current_organization_id::text AS current_organization_id, u.current_project_id, u.created_at';
const ORGANIZATION_COLUMNS = 'o.id::text AS id, o.name, o.slug, o.created_at, o.updated_at';

const KEY_STATEMENTS: KeyStatements = {
  keyAndUser: `SELECT k.id AS key_id, ${USER_COLUMNS} FROM personal_api_keys k JOIN users u ON u.id = k.user_id
    WHERE k.secure_value = $1 AND k.revoked_at IS NULL`,
  memberships: 'SELECT organization_id::text AS organization_id, level FROM memberships WHERE user_id = $1',
  recordUse: 'UPDATE personal_api_keys SET last_used_at = $1 WHERE id = $2',
};

/** Organization ids as bound uuids: a malformed one matches nothing (as DuckDB's TRY_CAST). */
const uuids = (ids: readonly string[]) => ids.filter(isUuid);

export function createPostgresManagementStore(pg: Pg, changes: Changes): ManagementStore {
  const write = <T>(fn: (tx: PgTx) => Promise<T>) =>
    pg.transaction(async (tx) => {
      const result = await fn(tx);
      await changes.publish(tx, { kind: 'management' });
      return result;
    });

  const insertProject = async (tx: PgTx, organizationId: string, name: string, settings: Partial<ProjectSettings>, token?: string) => {
    const now = new Date();
    const [row] = await tx.query(
      `INSERT INTO projects (uuid, organization_id, api_token, name, settings, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5::text::json, $6, $7) RETURNING ${PROJECT_COLUMNS}`,
      [uuidv4(), organizationId, token ?? newProjectToken(), name, JSON.stringify(settings), now, now],
    );
    return toProject(row);
  };

  const insertKey = async (tx: PgTx, userId: number, label: string, value: string) => {
    const [row] = await tx.query(
      `INSERT INTO personal_api_keys (id, user_id, label, secure_value, mask_value, created_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
      [uuidv4(), userId, label, hashSecret(value), maskSecret(value), new Date()],
    );
    return { ...toKey(row), value };
  };

  const userBy = async (where: string, value: unknown) => {
    const rows = await pg.query(`SELECT ${USER_COLUMNS} FROM users u WHERE ${where}`, [value]);
    return rows.length ? toUser(rows[0]) : null;
  };

  return {
    async isEmpty() {
      const [{ n }] = await pg.query<{ n: string }>('SELECT count(*) AS n FROM organizations');
      return Number(n) === 0;
    },

    async createAccount(input) {
      try {
        return await write(async (tx) => {
          const now = new Date();
          const [orgRow] = await tx.query(
            `INSERT INTO organizations (id, name, slug, created_at, updated_at) VALUES ($1, $2, $3, $4, $5) RETURNING id::text AS id, name, slug, created_at, updated_at`,
            [uuidv4(), input.organizationName, slugify(input.organizationName), now, now],
          );
          const organization = toOrganization(orgRow);
          let userRows = await tx.query(`SELECT ${USER_COLUMNS} FROM users u WHERE u.email = $1`, [input.email]);
          if (!userRows.length) {
            userRows = await tx.query(
              `INSERT INTO users AS u (uuid, distinct_id, first_name, email, current_organization_id, created_at)
               VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${USER_COLUMNS}`,
              [uuidv4(), uuidv4(), input.firstName ?? '', input.email, organization.id, now],
            );
          }
          const user = toUser(userRows[0]);
          await tx.run('INSERT INTO memberships (organization_id, user_id, level, created_at) VALUES ($1, $2, $3, $4)', [
            organization.id,
            user.id,
            MEMBERSHIP_LEVEL.owner,
            now,
          ]);
          const project = await insertProject(tx, organization.id, 'Default project', {}, input.projectApiKey);
          await tx.run('UPDATE users SET current_organization_id = $1, current_project_id = $2 WHERE id = $3', [organization.id, project.id, user.id]);
          const { id: keyId, value } = await insertKey(tx, user.id, 'Initial key', input.personalApiKey ?? newPersonalApiKey());
          return {
            organization,
            user: { ...user, currentOrganizationId: organization.id, currentProjectId: project.id },
            project,
            personalApiKey: { id: keyId, value },
          };
        });
      } catch (error) {
        translateUniqueViolation(error, 'An API key with this value already exists.', 'api_key');
      }
    },

    findUserByEmail: (email) => userBy('u.email = $1', email),
    findUserById: (id) => (impossibleId(id) ? Promise.resolve(null) : userBy('u.id = $1', id)),

    async listUsers() {
      const rows = await pg.query(
        `SELECT ${USER_COLUMNS},
                coalesce(array_agg(o.name ORDER BY o.created_at) FILTER (WHERE o.id IS NOT NULL), '{}') AS organization_names,
                (SELECT count(*) FROM personal_api_keys k WHERE k.user_id = u.id AND k.revoked_at IS NULL) AS active_keys
         FROM users u LEFT JOIN memberships m ON m.user_id = u.id LEFT JOIN organizations o ON o.id = m.organization_id
         GROUP BY u.id ORDER BY u.id`,
      );
      return rows.map((r) => ({ ...toUser(r), organizationNames: [...(r.organization_names as string[])], activeKeys: Number(r.active_keys) }));
    },

    authenticateKey: (secret) => authenticateKey(pg, KEY_STATEMENTS, secret),

    createPersonalApiKey: (userId, label, value) =>
      write((tx) => insertKey(tx, userId, label, value ?? newPersonalApiKey())).catch((error) =>
        translateUniqueViolation(error, 'An API key with this value already exists.', 'personal_api_key'),
      ),

    async listPersonalApiKeys(userId) {
      return (await pg.query('SELECT * FROM personal_api_keys WHERE user_id = $1 ORDER BY created_at', [userId])).map(toKey);
    },

    async revokePersonalApiKey(id, userId) {
      const rows = await write((tx) =>
        tx.query('UPDATE personal_api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL AND ($3::integer IS NULL OR user_id = $3) RETURNING id', [
          new Date(),
          id,
          userId ?? null,
        ]),
      );
      return rows.length > 0;
    },

    async getOrganization(id) {
      if (!isUuid(id)) return null;
      const rows = await pg.query(`SELECT ${ORGANIZATION_COLUMNS} FROM organizations o WHERE o.id = $1`, [id]);
      return rows.length ? toOrganization(rows[0]) : null;
    },

    async listOrganizations(userId) {
      const rows = await pg.query(
        `SELECT ${ORGANIZATION_COLUMNS}, m.level FROM organizations o JOIN memberships m ON m.organization_id = o.id
         WHERE m.user_id = $1 ORDER BY o.created_at`,
        [userId],
      );
      return rows.map((r) => ({ ...toOrganization(r), level: Number(r.level) }));
    },

    async listMembers(organizationId) {
      if (!isUuid(organizationId)) return [];
      const rows = await pg.query(`SELECT ${USER_COLUMNS} FROM users u JOIN memberships m ON m.user_id = u.id WHERE m.organization_id = $1 ORDER BY u.id`, [
        organizationId,
      ]);
      return rows.map(toUser);
    },

    async listProjects(organizationIds, page) {
      const ids = uuids(organizationIds);
      if (!ids.length) return { count: 0, results: [] };
      const [{ n }] = await pg.query<{ n: string }>('SELECT count(*) AS n FROM projects WHERE organization_id = ANY($1::uuid[])', [ids]);
      const rows = await pg.query(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE organization_id = ANY($1::uuid[]) ORDER BY id LIMIT $2 OFFSET $3`, [
        ids,
        page.limit,
        page.offset,
      ]);
      return { count: Number(n), results: rows.map(toProject) };
    },

    async getProject(id, organizationIds) {
      const ids = uuids(organizationIds);
      if (!ids.length || impossibleId(id)) return null;
      const rows = await pg.query(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = $1 AND organization_id = ANY($2::uuid[])`, [id, ids]);
      return rows.length ? toProject(rows[0]) : null;
    },

    createProject: (organizationId, name, settings, apiToken) =>
      write((tx) => insertProject(tx, organizationId, name, settings, apiToken)).catch((error) =>
        translateUniqueViolation(error, 'A project with this API token already exists.', 'api_token'),
      ),

    updateProject: (id, patch) =>
      write(async (tx) => {
        // Locked: two processes changing different settings of one project both keep theirs.
        const current = await tx.query<{ settings: string }>('SELECT settings::text AS settings FROM projects WHERE id = $1 FOR UPDATE', [id]);
        if (!current.length) throw new AppError('not_found', 'Not found.');
        const settings = { ...(JSON.parse(current[0].settings) as object), ...patch.settings };
        const [row] = await tx.query(
          `UPDATE projects SET name = coalesce($1, name), settings = $2::text::json, updated_at = $3 WHERE id = $4 RETURNING ${PROJECT_COLUMNS}`,
          [patch.name ?? null, JSON.stringify(settings), new Date(), id],
        );
        return toProject(row);
      }),

    async deleteProject(id) {
      if (impossibleId(id)) return;
      await write(async (tx) => {
        await tx.run('UPDATE users SET current_project_id = NULL WHERE current_project_id = $1', [id]);
        await tx.run('DELETE FROM projects WHERE id = $1', [id]);
      });
    },

    async findProjectByToken(token) {
      const rows = await pg.query(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE api_token = $1`, [token]);
      return rows.length ? toProject(rows[0]) : null;
    },

    async listAllProjects() {
      return (await pg.query(`SELECT ${PROJECT_COLUMNS} FROM projects ORDER BY id`)).map(toProject);
    },

    async markIngested(projectId) {
      // Told to the others only when it changed: every process marks each project once.
      await pg.transaction(async (tx) => {
        const changed = await tx.query('UPDATE projects SET ingested_event = true WHERE id = $1 AND NOT ingested_event RETURNING id', [projectId]);
        if (changed.length) await changes.publish(tx, { kind: 'management' });
      });
    },

    async setCurrentProject(userId, organizationId, projectId) {
      await write((tx) =>
        tx.run('UPDATE users SET current_organization_id = $1, current_project_id = $2 WHERE id = $3', [organizationId, projectId, userId]),
      );
    },
  };
}

