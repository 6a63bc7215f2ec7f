import { t } from 'elysia';

const Json = t.Union([t.Record(t.String(), t.Unknown()), t.Array(t.Unknown())]);
const StringList = t.Array(t.String());
const Nullable = <T extends Parameters<typeof t.Optional>[0]>(s: T) => t.Union([s, t.Null()]);

/** The writable fields of the spec's Project; every one type-checked. */
export const ProjectWritable = {
  app_urls: t.Optional(t.Array(t.String())),
  name: t.Optional(t.String({ minLength: 1, maxLength: 200 })),
  chat_incoming_webhook: t.Optional(Nullable(t.String())),
  anonymize_ips: t.Optional(t.Boolean()),
  completed_snippet_onboarding: t.Optional(t.Boolean()),
  test_account_filters: t.Optional(Json),
  test_account_filters_default_checked: t.Optional(Nullable(t.Boolean())),
  path_cleaning_filters: t.Optional(Nullable(Json)),
  is_demo: t.Optional(t.Boolean()),
  timezone: t.Optional(t.String()),
  data_attributes: t.Optional(Json),
  person_display_name_properties: t.Optional(Nullable(StringList)),
  correlation_config: t.Optional(Nullable(t.Record(t.String(), t.Unknown()))),
  session_recording_opt_in: t.Optional(t.Boolean()),
  capture_console_log_opt_in: t.Optional(Nullable(t.Boolean())),
  capture_performance_opt_in: t.Optional(Nullable(t.Boolean())),
  access_control: t.Optional(t.Boolean()),
  primary_dashboard: t.Optional(Nullable(t.Integer())),
  live_events_columns: t.Optional(Nullable(StringList)),
  recording_domains: t.Optional(Nullable(t.Array(t.String()))),
  /** Days of events kept (whole UTC days); null: forever. */
  events_retention_days: t.Optional(Nullable(t.Integer({ minimum: 1, maximum: 36500 }))),
};

export const ProjectCreateBody = t.Object({ ...ProjectWritable, name: t.String({ minLength: 1, maxLength: 200 }) });
export const ProjectUpdateBody = t.Object(ProjectWritable);

export const ProjectBasic = t.Object({
  id: t.Integer(),
  uuid: t.String(),
  organization: t.String(),
  api_token: t.String(),
  name: t.String(),
  completed_snippet_onboarding: t.Boolean(),
  ingested_event: t.Boolean(),
  is_demo: t.Boolean(),
  timezone: t.String(),
  access_control: t.Boolean(),
  effective_membership_level: t.Integer(),
});

export const ProjectFull = t.Object({
  id: t.Integer(),
  project_id: t.Integer(),
  uuid: t.String(),
  organization: t.String(),
  api_token: t.String(),
  app_urls: t.Array(t.String()),
  name: t.String(),
  chat_incoming_webhook: t.Union([t.String(), t.Null()]),
  created_at: t.String(),
  updated_at: t.String(),
  anonymize_ips: t.Boolean(),
  completed_snippet_onboarding: t.Boolean(),
  ingested_event: t.Boolean(),
  test_account_filters: t.Unknown(),
  test_account_filters_default_checked: t.Union([t.Boolean(), t.Null()]),
  path_cleaning_filters: t.Unknown(),
  is_demo: t.Boolean(),
  timezone: t.String(),
  data_attributes: t.Unknown(),
  person_display_name_properties: t.Union([StringList, t.Null()]),
  correlation_config: t.Unknown(),
  session_recording_opt_in: t.Boolean(),
  capture_console_log_opt_in: t.Union([t.Boolean(), t.Null()]),
  capture_performance_opt_in: t.Union([t.Boolean(), t.Null()]),
  effective_membership_level: t.Integer(),
  access_control: t.Boolean(),
  has_group_types: t.Boolean(),
  primary_dashboard: t.Union([t.Integer(), t.Null()]),
  live_events_columns: t.Union([StringList, t.Null()]),
  recording_domains: t.Union([t.Array(t.String()), t.Null()]),
  events_retention_days: t.Union([t.Integer(), t.Null()], { description: "Days of events kept: the project's own setting, else the server's EVENTS_RETENTION_DAYS; null: forever." }),
  person_on_events_querying_enabled: t.Boolean(),
  groups_on_events_querying_enabled: t.Boolean(),
});

export const ProjectParams = t.Object({ project_id: t.String() });
