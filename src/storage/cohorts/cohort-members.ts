import type { EventsSourceRef } from '../definitions/events-source';
import type { Database, Row, SqlParam } from '../db';
import type { CohortPerson, CohortStore, PersonIdKind } from './types';

/** Who is in a cohort: listings, static additions, and the reverse lookup flags need. */

const DISTINCT_ID_LIMIT = 10;
const BATCH = 500;

/** The members of one cohort of one project: its current version joined to live persons. */
const MEMBERS = `SELECT p.id, p.uuid::VARCHAR AS uuid, p.team_id, p.properties, p.created_at, p.is_identified
  FROM cohorts c
  JOIN cohort_people cp ON cp.cohort_id = c.id AND cp.version = c.version
  JOIN persons p ON p.uuid = cp.person_uuid AND p.team_id = c.team_id
  WHERE c.id = ? AND c.team_id = ?`;

const WITH_DISTINCT_IDS = `SELECT m.*, (SELECT list(d.distinct_id ORDER BY d.distinct_id) FROM person_distinct_ids d
  WHERE d.team_id = m.team_id AND d.person_uuid = m.uuid::UUID) AS distinct_ids FROM (${MEMBERS}) m`;

const toPerson = (r: Row): CohortPerson => ({
  id: Number(r.id),
  uuid: String(r.uuid),
  properties: typeof r.properties === 'string' ? JSON.parse(r.properties) : ((r.properties as Record<string, unknown>) ?? {}),
  createdAt: r.created_at as Date,
  isIdentified: Boolean(r.is_identified),
  distinctIds: ((r.distinct_ids as string[] | null) ?? []).slice(0, DISTINCT_ID_LIMIT),
});

/** How each kind of id finds the persons of a project; the ids are bound. */
const MATCHERS: Record<PersonIdKind, (marks: string) => string> = {
  distinct_id: (marks) => `SELECT DISTINCT person_uuid::VARCHAR AS uuid FROM person_distinct_ids WHERE team_id = ? AND distinct_id IN (${marks})`,
  person_id: (marks) => `SELECT uuid::VARCHAR AS uuid FROM persons WHERE team_id = ? AND uuid IN (${marks})`,
  email: (marks) => `SELECT uuid::VARCHAR AS uuid FROM persons WHERE team_id = ? AND json_extract_string(properties, '/email') IN (${marks})`,
};

type MemberStore = Pick<
  CohortStore,
  'addStaticPersons' | 'removeStaticPerson' | 'listCohortPersons' | 'iterateCohortPersons' | 'cohortPersonsShape' | 'cohortIdsForPerson' | 'removePerson'
>;

/** The uuids of the project's persons that `ids` name (each once). */
export async function findPersons(db: Database, sources: EventsSourceRef, teamId: number, kind: PersonIdKind, ids: string[]): Promise<string[]> {
  await sources.syncPersons?.(teamId);
  const found = new Set<string>();
  for (let i = 0; i < ids.length; i += BATCH) {
    let batch = ids.slice(i, i + BATCH);
    if (kind === 'person_id') batch = batch.filter((v) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v));
    if (!batch.length) continue;
    const rows = await db.query<{ uuid: string }>(MATCHERS[kind](batch.map(() => '?').join(', ')), [teamId, ...batch]);
    for (const r of rows) found.add(r.uuid);
  }
  return [...found];
}

const refreshCount = (db: Pick<Database, 'run'>, id: number, now: Date | null) =>
  db.run(
    `UPDATE cohorts SET count = (SELECT count(*) FROM cohort_people cp WHERE cp.cohort_id = cohorts.id AND cp.version = cohorts.version),
     last_calculation = coalesce(?, last_calculation), is_calculating = false WHERE id = ?`,
    [now, id],
  );

async function insertMembers(db: Pick<Database, 'run'>, teamId: number, id: number, uuids: string[]) {
  for (let i = 0; i < uuids.length; i += BATCH) {
    const batch = uuids.slice(i, i + BATCH);
    await db.run(
      `INSERT INTO cohort_people (cohort_id, person_uuid, version)
       SELECT c.id, u.uuid::UUID, c.version FROM cohorts c, (SELECT unnest([${batch.map(() => '?').join(', ')}]) AS uuid) u
       WHERE c.id = ? AND c.team_id = ? ON CONFLICT DO NOTHING`,
      [...batch, id, teamId],
    );
  }
}

/** Add members to a static cohort (persons of its project, by uuid); its count follows. */
export async function writeStaticMembers(db: Database, teamId: number, id: number, uuids: string[], now: Date): Promise<void> {
  await insertMembers(db, teamId, id, uuids);
  await refreshCount(db, id, now);
}

/**
 * Make a static cohort's members exactly `uuids` (a copy of members kept elsewhere); its count
 * follows, its last calculation stays.
 */
export async function replaceStaticMembers(db: Database, teamId: number, id: number, uuids: string[]): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.run('DELETE FROM cohort_people WHERE cohort_id = ?', [id]);
    await insertMembers(tx, teamId, id, uuids);
    await refreshCount(tx, id, null);
  });
}

export function createCohortMembers(db: Database, sources: EventsSourceRef = {}): MemberStore {
  return {
    async addStaticPersons(teamId, id, kind, ids, now) {
      const uuids = await findPersons(db, sources, teamId, kind, ids);
      await writeStaticMembers(db, teamId, id, uuids, now);
      return uuids.length;
    },

    async removeStaticPerson(teamId, id, personUuid, now) {
      const params: SqlParam[] = [id, personUuid, id, teamId];
      const where = `cohort_id = ? AND person_uuid = TRY_CAST(? AS UUID) AND version = (SELECT version FROM cohorts WHERE id = ? AND team_id = ?)`;
      const [{ n }] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM cohort_people WHERE ${where}`, params);
      if (!n) return false;
      await db.run(`DELETE FROM cohort_people WHERE ${where}`, params);
      await refreshCount(db, id, now);
      return true;
    },

    async listCohortPersons(teamId, cohortId, page) {
      await sources.syncPersons?.(teamId);
      const [{ n }] = await db.query<{ n: number }>(`SELECT count(*) AS n FROM (${MEMBERS})`, [cohortId, teamId]);
      const rows = await db.query(`${WITH_DISTINCT_IDS} ORDER BY m.id LIMIT ? OFFSET ?`, [cohortId, teamId, page.limit, page.offset]);
      return { count: n, results: rows.map(toPerson) };
    },

    async *iterateCohortPersons(teamId, cohortId, batchSize = 1000) {
      await sources.syncPersons?.(teamId);
      let after = -1;
      for (;;) {
        const rows = await db.query(`${WITH_DISTINCT_IDS} WHERE m.id > ? ORDER BY m.id LIMIT ?`, [cohortId, teamId, after, batchSize]);
        if (!rows.length) return;
        const persons = rows.map(toPerson);
        yield persons;
        after = persons[persons.length - 1].id;
      }
    },

    async cohortPersonsShape(teamId, cohortId) {
      const keys = await db.query<{ key: string }>(
        `SELECT DISTINCT unnest(json_keys(m.properties)) AS key FROM (${MEMBERS}) m ORDER BY key`,
        [cohortId, teamId],
      );
      const [{ n }] = await db.query<{ n: number | null }>(
        `SELECT max(k) AS n FROM (SELECT count(*) AS k FROM person_distinct_ids d JOIN (${MEMBERS}) m
         ON d.team_id = m.team_id AND d.person_uuid = m.uuid::UUID GROUP BY m.id)`,
        [cohortId, teamId],
      );
      return { propertyKeys: keys.map((k) => k.key), maxDistinctIds: Math.min(n ?? 0, DISTINCT_ID_LIMIT) };
    },

    async removePerson(teamId, personUuid) {
      // Every version: a calculation that wrote its new version before the person was deleted
      // loses them here, and its switch to that version counts what is left.
      await db.transaction(async (tx) => {
        const had = await tx.query<{ id: number }>(
          `SELECT DISTINCT cp.cohort_id AS id FROM cohort_people cp JOIN cohorts c ON c.id = cp.cohort_id
           WHERE c.team_id = ? AND cp.person_uuid = TRY_CAST(? AS UUID)`,
          [teamId, personUuid],
        );
        if (!had.length) return;
        const ids = had.map((r) => Number(r.id));
        const marks = ids.map(() => '?').join(', ');
        await tx.run(`DELETE FROM cohort_people WHERE person_uuid = TRY_CAST(? AS UUID) AND cohort_id IN (${marks})`, [personUuid, ...ids]);
        await tx.run(
          `UPDATE cohorts SET count = (SELECT count(*) FROM cohort_people cp WHERE cp.cohort_id = cohorts.id AND cp.version = cohorts.version) WHERE id IN (${marks})`,
          ids,
        );
      });
    },

    async cohortIdsForPerson(teamId, personUuid) {
      const rows = await db.query<{ id: number }>(
        `SELECT c.id FROM cohort_people cp JOIN cohorts c ON c.id = cp.cohort_id AND c.version = cp.version
         WHERE cp.person_uuid = TRY_CAST(? AS UUID) AND c.team_id = ? AND NOT c.deleted`,
        [personUuid, teamId],
      );
      return new Set(rows.map((r) => r.id));
    },
  };
}
