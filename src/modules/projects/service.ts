import { AppError } from '../../errors';
import { retentionDays } from '../../core/projects/retention';
import { TIMEZONES } from '../../core/projects/timezones';
import type { Project, ProjectSettings } from '../../storage';

export function toProjectBasic(p: Project, level: number) {
  return {
    id: p.id,
    uuid: p.uuid,
    organization: p.organizationId,
    api_token: p.apiToken,
    name: p.name,
    completed_snippet_onboarding: p.settings.completed_snippet_onboarding,
    ingested_event: p.ingestedEvent,
    is_demo: p.settings.is_demo,
    timezone: p.settings.timezone,
    access_control: p.settings.access_control,
    effective_membership_level: level,
  };
}

/** `defaultRetentionDays`: the server's EVENTS_RETENTION_DAYS, in force where the project has no setting of its own. */
export function toProjectFull(p: Project, level: number, defaultRetentionDays: number | undefined, hasGroupTypes = false) {
  const { events_retention_days: retention, ...settings } = p.settings;
  return {
    id: p.id,
    project_id: p.id,
    uuid: p.uuid,
    organization: p.organizationId,
    api_token: p.apiToken,
    name: p.name,
    created_at: p.createdAt.toISOString(),
    updated_at: p.updatedAt.toISOString(),
    ingested_event: p.ingestedEvent,
    ...settings,
    events_retention_days: retentionDays(retention, defaultRetentionDays),
    effective_membership_level: level,
    has_group_types: hasGroupTypes,
    person_on_events_querying_enabled: true,
    groups_on_events_querying_enabled: true,
  };
}

/** Split a create/update body into the name and the settings; checks what the schema cannot. */
export function toProjectPatch(body: Record<string, unknown>): { name?: string; settings: Partial<ProjectSettings> } {
  const { name, ...rest } = body;
  if (rest.timezone !== undefined && !TIMEZONES.has(rest.timezone as string)) {
    throw new AppError('invalid_choice', `"${String(rest.timezone)}" is not a valid choice.`, 'timezone');
  }
  return { name: name as string | undefined, settings: rest as Partial<ProjectSettings> };
}
