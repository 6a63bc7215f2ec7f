import type { Database, Tx } from '../db';
import { translateConstraintError } from '../db';
import { hashSecret, maskSecret, newPersonalApiKey, newProjectToken, uuidv4 } from '../../ids';
import { authenticateKey, type KeyStatements } from './authenticate-key';
import { slugify, toKey, toOrganization, toProject, toUser } from './management-rows';
import { MEMBERSHIP_LEVEL, type ManagementStore, type ProjectSettings } from './types';

const PROJECT_COLUMNS = 'id, uuid, organization_id, api_token, name, settings, ingested_event, created_at, updated_at';

const KEY_STATEMENTS: KeyStatements = {
  keyAndUser: `SELECT k.id AS key_id, u.* FROM personal_api_keys k JOIN users u ON u.id = k.user_id
    WHERE k.secure_value = ? AND k.revoked_at IS NULL`,
  memberships: 'SELECT organization_id, level FROM memberships WHERE user_id = ?',
  recordUse: 'UPDATE personal_api_keys SET last_used_at = ? WHERE id = ?',
};

export function createManagementStore(db: Database): ManagementStore {
  const insertProject = async (tx: Tx, organizationId: string, name: string, settings: Partial<ProjectSettings>, token?: string) => {
    const now = new Date();
    const rows = await tx.query(
      `INSERT INTO projects (uuid, organization_id, api_token, name, settings, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING ${PROJECT_COLUMNS}`,
      [uuidv4(), organizationId, token ?? newProjectToken(), name, JSON.stringify(settings), now, now],
    );
    return toProject(rows[0]);
  };

  const insertKey = async (tx: Tx, userId: number, label: string, value: string) => {
    const rows = await tx.query(
      `INSERT INTO personal_api_keys (id, user_id, label, secure_value, mask_value, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *`,
      [uuidv4(), userId, label, hashSecret(value), maskSecret(value), new Date()],
    );
    return { ...toKey(rows[0]), value };
  };

  return {
    async isEmpty() {
      const rows = await db.query<{ n: number }>('SELECT count(*) AS n FROM organizations');
      return rows[0].n === 0;
    },

    async createAccount(input) {
      try {
        return await db.transaction(async (tx) => {
          const now = new Date();
          const orgRows = await tx.query(
            'INSERT INTO organizations (id, name, slug, created_at, updated_at) VALUES (?, ?, ?, ?, ?) RETURNING *',
            [uuidv4(), input.organizationName, slugify(input.organizationName), now, now],
          );
          const organization = toOrganization(orgRows[0]);
          let userRows = await tx.query('SELECT * FROM users WHERE email = ?', [input.email]);
          if (!userRows.length) {
            userRows = await tx.query(
              `INSERT INTO users (uuid, distinct_id, first_name, email, current_organization_id, created_at)
               VALUES (?, ?, ?, ?, ?, ?) RETURNING *`,
              [uuidv4(), uuidv4(), input.firstName ?? '', input.email, organization.id, now],
            );
          }
          const user = toUser(userRows[0]);
          await tx.run('INSERT INTO memberships (organization_id, user_id, level, created_at) VALUES (?, ?, ?, ?)', [
            organization.id,
            user.id,
            MEMBERSHIP_LEVEL.owner,
            now,
          ]);
          const project = await insertProject(tx, organization.id, 'Default project', {}, input.projectApiKey);
          await tx.run('UPDATE users SET current_organization_id = ?, current_project_id = ? WHERE id = ?', [
            organization.id,
            project.id,
            user.id,
          ]);
          const { id: keyId, value } = await insertKey(tx, user.id, 'Initial key', input.personalApiKey ?? newPersonalApiKey());
          return {
            organization,
            user: { ...user, currentOrganizationId: organization.id, currentProjectId: project.id },
            project,
            personalApiKey: { id: keyId, value },
          };
        });
      } catch (error) {
        translateConstraintError(error, 'An API key with this value already exists.', 'api_key');
      }
    },

    async findUserByEmail(email) {
      const rows = await db.query('SELECT * FROM users WHERE email = ?', [email]);
      return rows.length ? toUser(rows[0]) : null;
    },

    async listUsers() {
      const rows = await db.query(
        `SELECT u.*, coalesce(list(o.name ORDER BY o.created_at) FILTER (WHERE o.id IS NOT NULL), []) AS organization_names,
                (SELECT count(*) FROM personal_api_keys k WHERE k.user_id = u.id AND k.revoked_at IS NULL) AS active_keys
         FROM users u LEFT JOIN memberships m ON m.user_id = u.id LEFT JOIN organizations o ON o.id = m.organization_id
         GROUP BY ALL ORDER BY u.id`,
      );
      return rows.map((r) => ({ ...toUser(r), organizationNames: [...(r.organization_names as string[])], activeKeys: Number(r.active_keys) }));
    },

    async findUserById(id) {
      const rows = await db.query('SELECT * FROM users WHERE id = ?', [id]);
      return rows.length ? toUser(rows[0]) : null;
    },

    authenticateKey: (secret) => authenticateKey(db, KEY_STATEMENTS, secret),

    createPersonalApiKey: (userId, label, value) =>
      db.transaction((tx) => insertKey(tx, userId, label, value ?? newPersonalApiKey())).catch((error) =>
        translateConstraintError(error, 'An API key with this value already exists.', 'personal_api_key'),
      ),

    async listPersonalApiKeys(userId) {
      const rows = await db.query('SELECT * FROM personal_api_keys WHERE user_id = ? ORDER BY created_at', [userId]);
      return rows.map(toKey);
    },

    async revokePersonalApiKey(id, userId) {
      const rows = await db.query('SELECT id FROM personal_api_keys WHERE id = ? AND revoked_at IS NULL AND (? IS NULL OR user_id = ?)', [id, userId ?? null, userId ?? null]);
      if (!rows.length) return false;
      await db.run('UPDATE personal_api_keys SET revoked_at = ? WHERE id = ?', [new Date(), id]);
      return true;
    },

    async getOrganization(id) {
      const rows = await db.query('SELECT * FROM organizations WHERE id = TRY_CAST(? AS UUID)', [id]);
      return rows.length ? toOrganization(rows[0]) : null;
    },

    async listOrganizations(userId) {
      const rows = await db.query(
        `SELECT o.*, m.level FROM organizations o JOIN memberships m ON m.organization_id = o.id
         WHERE m.user_id = ? ORDER BY o.created_at`,
        [userId],
      );
      return rows.map((r) => ({ ...toOrganization(r), level: Number(r.level) }));
    },

    async listMembers(organizationId) {
      const rows = await db.query(
        `SELECT u.* FROM users u JOIN memberships m ON m.user_id = u.id WHERE m.organization_id = TRY_CAST(? AS UUID) ORDER BY u.id`,
        [organizationId],
      );
      return rows.map(toUser);
    },

    async listProjects(organizationIds, page) {
      if (!organizationIds.length) return { count: 0, results: [] };
      const marks = organizationIds.map(() => '?').join(', ');
      const [{ n }] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM projects WHERE organization_id IN (${marks})`, organizationIds);
      const rows = await db.query(
        `SELECT ${PROJECT_COLUMNS} FROM projects WHERE organization_id IN (${marks}) ORDER BY id LIMIT ? OFFSET ?`,
        [...organizationIds, page.limit, page.offset],
      );
      return { count: n, results: rows.map(toProject) };
    },

    async getProject(id, organizationIds) {
      if (!organizationIds.length) return null;
      const marks = organizationIds.map(() => '?').join(', ');
      const rows = await db.query(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE id = ? AND organization_id IN (${marks})`, [
        id,
        ...organizationIds,
      ]);
      return rows.length ? toProject(rows[0]) : null;
    },

    createProject: (organizationId, name, settings, apiToken) =>
      db.transaction((tx) => insertProject(tx, organizationId, name, settings, apiToken)).catch((error) =>
        translateConstraintError(error, 'A project with this API token already exists.', 'api_token'),
      ),

    async updateProject(id, patch) {
      return db.transaction(async (tx) => {
        const current = await tx.query(`SELECT settings FROM projects WHERE id = ?`, [id]);
        const settings = { ...(JSON.parse(String(current[0].settings)) as object), ...patch.settings };
        const rows = await tx.query(
          `UPDATE projects SET name = coalesce(?, name), settings = ?, updated_at = ? WHERE id = ? RETURNING ${PROJECT_COLUMNS}`,
          [patch.name ?? null, JSON.stringify(settings), new Date(), id],
        );
        return toProject(rows[0]);
      });
    },

    async deleteProject(id) {
      await db.transaction(async (tx) => {
        await tx.run('UPDATE users SET current_project_id = NULL WHERE current_project_id = ?', [id]);
        await tx.run('DELETE FROM projects WHERE id = ?', [id]);
      });
    },

    async findProjectByToken(token) {
      const rows = await db.query(`SELECT ${PROJECT_COLUMNS} FROM projects WHERE api_token = ?`, [token]);
      return rows.length ? toProject(rows[0]) : null;
    },

    async listAllProjects() {
      return (await db.query(`SELECT ${PROJECT_COLUMNS} FROM projects ORDER BY id`)).map(toProject);
    },

    async markIngested(projectId) {
      await db.run('UPDATE projects SET ingested_event = true WHERE id = ? AND NOT ingested_event', [projectId]);
    },

    async setCurrentProject(userId, organizationId, projectId) {
      await db.run('UPDATE users SET current_organization_id = ?, current_project_id = ? WHERE id = ?', [organizationId, projectId, userId]);
    },
  };
}
