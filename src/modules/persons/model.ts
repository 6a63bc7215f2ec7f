import { t } from 'elysia';
import { PageQuery } from '../../http/schemas';

export const PersonsParams = t.Object({ project_id: t.String() });
export const PersonIdParams = t.Object({ project_id: t.String(), id: t.String({ description: "The person's integer id or uuid." }) });

const JsonObject = t.Record(t.String(), t.Unknown());

/** PostHog's person serializer. */
export const Person = t.Object({
  id: t.Integer(),
  uuid: t.String(),
  name: t.String({ description: 'The first set display property (email, name, username by default), else a distinct id.' }),
  distinct_ids: t.Array(t.String()),
  properties: JsonObject,
  created_at: t.String(),
  is_identified: t.Boolean(),
});

export const PersonsQuery = t.Object({
  ...PageQuery.properties,
  search: t.Optional(t.String({ description: 'Case-insensitive substring of a distinct id, the email or the name property.' })),
  distinct_id: t.Optional(t.String({ description: 'Only the person with this distinct id.' })),
  properties: t.Optional(
    t.String({
      description:
        'JSON: a list of person property filters `{key, value, operator?, type: "person", negation?}` (AND), or a group `{type: "AND"|"OR", values: [...]}`; operators as in feature flags.',
    }),
  ),
});

export const PersonPatchBody = t.Object({
  properties: t.Optional(t.Record(t.String(), t.Unknown(), { description: 'Merged into the person\'s properties (as `$set` does).' })),
});

/** PostHog reads `delete_events` by its presence (`?delete_events`); true/false/1/0 are read as they say. */
export const PersonDeleteQuery = t.Object({
  delete_events: t.Optional(
    t.String({
      pattern: '^(|true|false|True|False|TRUE|FALSE|1|0)$',
      error: 'Must be a valid boolean.',
      description:
        "Also delete every event of the person (any of their distinct ids, or their person id) from storage before answering: the GDPR right to erasure. Present without a value, it counts as true (as PostHog reads it). Events captured while the deletion runs belong to a new person.",
    }),
  ),
});
