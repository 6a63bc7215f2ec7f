import { t } from 'elysia';
import { EmbeddedUser, PageQuery } from '../../http/schemas';

export const CohortParams = t.Object({ project_id: t.String() });
export const CohortIdParams = t.Object({ project_id: t.String(), id: t.String({ description: 'Cohort id (integer).' }) });

const JsonObject = t.Record(t.String(), t.Unknown());

/**
 * The writable fields. JSON bodies send them as JSON; a multipart upload (static cohorts with a
 * `csv` file) sends text fields, so booleans accept "true"/"false" and `filters`/`groups` may
 * come as JSON text.
 */
export const CohortWritable = {
  name: t.Optional(t.Union([t.String({ maxLength: 400 }), t.Null()])),
  description: t.Optional(t.String({ maxLength: 1000 })),
  groups: t.Optional(
    t.Unknown({ description: 'Legacy definition: a list of groups, each `{properties: [...]}` or `{event_id, days, count?, count_operator?}`; OR-ed.' }),
  ),
  filters: t.Optional(
    t.Unknown({ description: "`{properties: {type: 'AND'|'OR', values: [...]}}` of person, behavioral and cohort filters; null to use `groups`." }),
  ),
  deleted: t.Optional(t.BooleanString({ description: 'true hides the cohort (soft delete); hard DELETE is refused.' })),
  is_static: t.Optional(t.BooleanString()),
  csv: t.Optional(t.File({ description: 'Static cohorts: a CSV whose column holds distinct ids (or a person_id / email / distinct_id header).' })),
  _create_static_person_ids: t.Optional(t.Array(t.String(), { description: 'Static cohorts, on create: person UUIDs to add.' })),
};

export const CohortBody = t.Object(CohortWritable);

export const Cohort = t.Object({
  id: t.Integer(),
  name: t.Union([t.String(), t.Null()]),
  description: t.String(),
  groups: t.Array(JsonObject),
  deleted: t.Boolean(),
  filters: JsonObject,
  query: t.Null(),
  is_calculating: t.Boolean(),
  created_by: t.Union([EmbeddedUser, t.Null()]),
  created_at: t.String(),
  last_calculation: t.Union([t.String(), t.Null()]),
  errors_calculating: t.Integer(),
  count: t.Union([t.Integer(), t.Null()]),
  is_static: t.Boolean(),
});

export const CohortPerson = t.Object({
  id: t.Integer(),
  uuid: t.String(),
  name: t.String(),
  distinct_ids: t.Array(t.String()),
  properties: JsonObject,
  created_at: t.String(),
  is_identified: t.Boolean(),
});

export const CohortPersonsQuery = t.Object({
  ...PageQuery.properties,
  format: t.Optional(t.Union([t.Literal('json'), t.Literal('csv')], { description: 'csv streams every member (or one page with limit/offset).' })),
});

export const AddPersonsBody = t.Object({ person_ids: t.Array(t.String(), { description: 'Person UUIDs to add.' }) });
export const RemovePersonBody = t.Object({ person_id: t.String({ description: 'Person UUID to remove.' }) });
export const Success = t.Object({ success: t.Boolean() });
