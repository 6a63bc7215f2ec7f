import type { Row } from '../db';
import { DEFAULT_PROJECT_SETTINGS, type Organization, type PersonalApiKey, type Project, type ProjectSettings, type User } from './types';

/** Management rows as either engine gives them back (PostgreSQL's store selects uuids and JSON as text), and an organization's slug. */

export const slugify = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 48) || 'organization';

export const toOrganization = (r: Row): Organization => ({
  id: String(r.id),
  name: String(r.name),
  slug: String(r.slug),
  createdAt: r.created_at as Date,
  updatedAt: r.updated_at as Date,
});

export const toUser = (r: Row): User => ({
  id: Number(r.id),
  uuid: String(r.uuid),
  distinctId: String(r.distinct_id),
  firstName: String(r.first_name),
  lastName: String(r.last_name),
  email: String(r.email),
  currentOrganizationId: r.current_organization_id == null ? null : String(r.current_organization_id),
  currentProjectId: r.current_project_id == null ? null : Number(r.current_project_id),
  createdAt: r.created_at as Date,
});

export const toProject = (r: Row): Project => ({
  id: Number(r.id),
  uuid: String(r.uuid),
  organizationId: String(r.organization_id),
  apiToken: String(r.api_token),
  name: String(r.name),
  ingestedEvent: Boolean(r.ingested_event),
  settings: { ...DEFAULT_PROJECT_SETTINGS, ...(JSON.parse(String(r.settings)) as Partial<ProjectSettings>) },
  createdAt: r.created_at as Date,
  updatedAt: r.updated_at as Date,
});

export const toKey = (r: Row): PersonalApiKey => ({
  id: String(r.id),
  userId: Number(r.user_id),
  label: String(r.label),
  maskValue: String(r.mask_value),
  createdAt: r.created_at as Date,
  lastUsedAt: (r.last_used_at as Date | null) ?? null,
  revokedAt: (r.revoked_at as Date | null) ?? null,
});
