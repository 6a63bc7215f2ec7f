/**
 * Persons as relations for the query compiler's statements: trusted SQL text (a parenthesized
 * subquery named for `FROM`), like the events relation, that inlines only the validated team id.
 * The compiler's statements scope to the team again outside the request's conditions, so each
 * relation is scoped twice. Persons live in memory first: flush the person store before reading.
 */

function checkTeam(teamId: number): void {
  if (!Number.isSafeInteger(teamId)) throw new Error('teamId must be an integer');
}

/**
 * The events relation (`FROM <sql>`, as the event store gives it) with each event's person as it
 * is now, joined through its distinct id: `person_properties` (JSON), `person_created_at` and
 * `person_is_identified`, all NULL for a distinct id without a person. Named `events`.
 */
export function eventsWithPersons(eventsSql: string, teamId: number): string {
  checkTeam(teamId);
  return (
    `(SELECT events.*, persons.properties AS person_properties, persons.created_at AS person_created_at, ` +
    `persons.is_identified AS person_is_identified FROM ${eventsSql} AS events ` +
    `LEFT JOIN person_distinct_ids AS pdi ON pdi.team_id = ${teamId} AND pdi.distinct_id = events.distinct_id ` +
    `LEFT JOIN persons ON persons.team_id = ${teamId} AND persons.uuid = pdi.person_uuid)`
  );
}

/**
 * One project's persons, named `persons`: `team_id`, `id` (the uuid as text), `created_at`,
 * `properties` (JSON text) and `is_identified`; with `distinctIds`, one row per distinct id of a
 * person and its `pdi_distinct_id` (PostHog's `persons.pdi.distinct_id`).
 */
export function personsRelation(teamId: number, options: { distinctIds?: boolean } = {}): string {
  checkTeam(teamId);
  const columns =
    'persons.team_id, CAST(persons.uuid AS VARCHAR) AS id, persons.created_at, CAST(persons.properties AS VARCHAR) AS properties, persons.is_identified';
  const select = options.distinctIds
    ? `SELECT ${columns}, pdi.distinct_id AS pdi_distinct_id FROM persons JOIN person_distinct_ids AS pdi ON pdi.team_id = ${teamId} AND pdi.person_uuid = persons.uuid`
    : `SELECT ${columns} FROM persons`;
  return `(${select} WHERE persons.team_id = ${teamId}) AS persons`;
}
