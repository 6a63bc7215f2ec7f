import type { Deps } from '../../deps';
import { organizationIds } from '../../http/auth';
import type { Principal, Project } from '../../storage';
import { toProjectBasic } from '../projects/service';

/** What both user endpoints show: the user's current organization and project, and what it has seen. */
async function loadContext(deps: Deps, principal: Principal) {
  const { management, definitions } = deps.storage;
  const organizations = await management.listOrganizations(principal.user.id);
  const currentOrgId = principal.user.currentOrganizationId ?? organizations[0]?.id ?? null;
  const organization = organizations.find((o) => o.id === currentOrgId) ?? null;
  const { results: projects } = organization
    ? await management.listProjects([organization.id], { limit: 1000, offset: 0 })
    : { results: [] as Project[] };
  let project: Project | null = null;
  if (principal.user.currentProjectId !== null) project = await management.getProject(principal.user.currentProjectId, organizationIds(principal));
  project ??= projects[0] ?? null;
  const seen = project
    ? {
        eventNames: await definitions.eventNames(project.id),
        eventProperties: await definitions.propertyNames(project.id, 'event'),
        personProperties: await definitions.propertyNames(project.id, 'person'),
      }
    : { eventNames: [], eventProperties: [], personProperties: [] };
  return { organizations, organization, projects, project, seen };
}

export async function currentUser(deps: Deps, principal: Principal) {
  const { organizations, organization, projects, project, seen } = await loadContext(deps, principal);
  const u = principal.user;
  return {
    id: u.id,
    uuid: u.uuid,
    distinct_id: u.distinctId,
    first_name: u.firstName,
    last_name: u.lastName,
    email: u.email,
    date_joined: u.createdAt.toISOString(),
    pending_email: null,
    is_email_verified: true,
    has_password: false,
    is_staff: false,
    is_impersonated: false,
    anonymize_data: false,
    toolbar_mode: 'toolbar',
    notification_settings: {},
    team: project
      ? {
          ...toProjectBasic(project, organization?.level ?? 0),
          app_urls: project.settings.app_urls,
          event_names: seen.eventNames,
          event_properties: seen.eventProperties.map((p) => p.name),
          event_properties_numerical: seen.eventProperties.filter((p) => p.isNumerical).map((p) => p.name),
          person_properties: seen.personProperties.map((p) => p.name),
        }
      : null,
    organization: organization
      ? {
          id: organization.id,
          name: organization.name,
          slug: organization.slug,
          created_at: organization.createdAt.toISOString(),
          updated_at: organization.updatedAt.toISOString(),
          membership_level: organization.level,
          teams: projects.map((p) => ({ id: p.id, name: p.name, api_token: p.apiToken })),
        }
      : null,
    organizations: organizations.map((o) => ({ id: o.id, name: o.name, slug: o.slug, logo_media_id: null, membership_level: o.level })),
    posthog_version: deps.version,
  };
}

/** The shape of PostHog's deprecated `/api/user/` (2021). */
export async function legacyUser(deps: Deps, principal: Principal) {
  const { organizations, organization, projects, project, seen } = await loadContext(deps, principal);
  const u = principal.user;
  const eventProperties = seen.eventProperties.map((p) => p.name);
  return {
    id: u.id,
    distinct_id: u.distinctId,
    name: u.firstName,
    email: u.email,
    email_opt_in: false,
    anonymize_data: false,
    toolbar_mode: 'toolbar',
    organization: organization
      ? {
          id: organization.id,
          name: organization.name,
          billing_plan: null,
          available_features: [],
          created_at: organization.createdAt.toISOString(),
          updated_at: organization.updatedAt.toISOString(),
          teams: projects.map((p) => ({ id: p.id, name: p.name })),
        }
      : null,
    organizations: organizations.map((o) => ({ id: o.id, name: o.name })),
    team: project
      ? {
          id: project.id,
          name: project.name,
          app_urls: project.settings.app_urls,
          api_token: project.apiToken,
          opt_out_capture: false,
          anonymize_ips: project.settings.anonymize_ips,
          slack_incoming_webhook: project.settings.chat_incoming_webhook,
          event_names: seen.eventNames,
          event_names_with_usage: seen.eventNames.map((event) => ({ event, volume: null, usage_count: null })),
          event_properties: eventProperties,
          event_properties_numerical: seen.eventProperties.filter((p) => p.isNumerical).map((p) => p.name),
          event_properties_with_usage: eventProperties.map((key) => ({ key, volume: null, usage_count: null })),
          completed_snippet_onboarding: project.settings.completed_snippet_onboarding,
          session_recording_opt_in: project.settings.session_recording_opt_in,
          session_recording_retention_period_days: null,
          plugins_opt_in: false,
          ingested_event: project.ingestedEvent,
          is_demo: project.settings.is_demo,
        }
      : null,
    teams: projects.map((p) => ({ id: p.id, name: p.name })),
    has_password: false,
    opt_out_capture: false,
    posthog_version: deps.version,
    is_multi_tenancy: false,
    ee_available: false,
    ee_enabled: false,
    email_service_available: false,
    is_debug: false,
    is_staff: false,
    is_impersonated: false,
    plugin_access: { install: false, configure: false },
  };
}
