/** Management entities as the rest of the code sees them (no storage engine types). */

export const MEMBERSHIP_LEVEL = { member: 1, admin: 8, owner: 15 } as const;

export interface Organization {
  id: string;
  name: string;
  slug: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface User {
  id: number;
  uuid: string;
  distinctId: string;
  firstName: string;
  lastName: string;
  email: string;
  currentOrganizationId: string | null;
  currentProjectId: number | null;
  createdAt: Date;
}

export interface Membership {
  organizationId: string;
  userId: number;
  level: number;
}

export interface PersonalApiKey {
  id: string;
  userId: number;
  label: string;
  maskValue: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

/** Writable project settings, persisted as one JSON document next to the identity columns. */
export interface ProjectSettings {
  app_urls: string[];
  chat_incoming_webhook: string | null;
  anonymize_ips: boolean;
  completed_snippet_onboarding: boolean;
  test_account_filters: unknown;
  test_account_filters_default_checked: boolean;
  path_cleaning_filters: unknown;
  is_demo: boolean;
  timezone: string;
  data_attributes: unknown;
  person_display_name_properties: string[] | null;
  correlation_config: unknown;
  session_recording_opt_in: boolean;
  capture_console_log_opt_in: boolean;
  capture_performance_opt_in: boolean;
  access_control: boolean;
  primary_dashboard: number | null;
  live_events_columns: string[] | null;
  recording_domains: string[] | null;
  /** Days of events kept; null: forever; absent: the server's default (EVENTS_RETENTION_DAYS). */
  events_retention_days?: number | null;
}

export interface Project {
  id: number;
  uuid: string;
  organizationId: string;
  apiToken: string;
  name: string;
  ingestedEvent: boolean;
  settings: ProjectSettings;
  createdAt: Date;
  updatedAt: Date;
}

/** PostHog's defaults for a new project. */
export const DEFAULT_PROJECT_SETTINGS: ProjectSettings = {
  app_urls: [],
  chat_incoming_webhook: null,
  anonymize_ips: false,
  completed_snippet_onboarding: false,
  test_account_filters: [],
  test_account_filters_default_checked: false,
  path_cleaning_filters: [],
  is_demo: false,
  timezone: 'UTC',
  data_attributes: ['data-attr'],
  person_display_name_properties: ['email', 'name', 'username'],
  correlation_config: {},
  session_recording_opt_in: false,
  capture_console_log_opt_in: true,
  capture_performance_opt_in: true,
  access_control: false,
  primary_dashboard: null,
  live_events_columns: null,
  recording_domains: null,
};

/** Who is calling the private API, as resolved from a personal API key. */
export interface Principal {
  user: User;
  keyId: string;
  /** Organization id → membership level. */
  memberships: Map<string, number>;
}

export interface CreatedAccount {
  organization: Organization;
  user: User;
  project: Project;
  personalApiKey: { id: string; value: string };
}

export interface ManagementStore {
  isEmpty(): Promise<boolean>;
  createAccount(input: {
    email: string;
    organizationName: string;
    personalApiKey?: string;
    projectApiKey?: string;
    firstName?: string;
  }): Promise<CreatedAccount>;
  findUserByEmail(email: string): Promise<User | null>;
  findUserById(id: number): Promise<User | null>;
  /** Every user, with the names of their organizations and how many keys they hold unrevoked. */
  listUsers(): Promise<Array<User & { organizationNames: string[]; activeKeys: number }>>;
  /** Resolve a personal API key by its hash; null when unknown or revoked. Records last use. */
  authenticateKey(secret: string): Promise<Principal | null>;
  /** The new key with its secret (`value`), which is stored only as a hash and never shown again. */
  createPersonalApiKey(userId: number, label: string, value?: string): Promise<PersonalApiKey & { value: string }>;
  listPersonalApiKeys(userId: number): Promise<PersonalApiKey[]>;
  /** Revoke an active key (only `userId`'s, when given); false when there is none. */
  revokePersonalApiKey(id: string, userId?: number): Promise<boolean>;
  getOrganization(id: string): Promise<Organization | null>;
  listOrganizations(userId: number): Promise<Array<Organization & { level: number }>>;
  listMembers(organizationId: string): Promise<User[]>;
  listProjects(organizationIds: string[], page: { limit: number; offset: number }): Promise<{ count: number; results: Project[] }>;
  /** A project only if it belongs to one of `organizationIds`. */
  getProject(id: number, organizationIds: string[]): Promise<Project | null>;
  createProject(organizationId: string, name: string, settings: Partial<ProjectSettings>, apiToken?: string): Promise<Project>;
  updateProject(id: number, patch: { name?: string; settings?: Partial<ProjectSettings> }): Promise<Project>;
  deleteProject(id: number): Promise<void>;
  findProjectByToken(token: string): Promise<Project | null>;
  /** Every project of every organization (server-wide upkeep such as retention). */
  listAllProjects(): Promise<Project[]>;
  markIngested(projectId: number): Promise<void>;
  setCurrentProject(userId: number, organizationId: string, projectId: number): Promise<void>;
}
