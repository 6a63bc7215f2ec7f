import { chunks } from '../chunks';
import { freeGroupTypeIndex, MAX_GROUP_TYPES } from '../../core/ingest/person-updates';
import { NO_GROUP_TYPE_INDEX, type PersonChanges, type PersonHome } from '../persons/types';
import type { Changes } from './changes';
import { isUuid, type Pg, type PgTx } from './client';
import { lockLiveProjects } from './live-projects';

type PersonRow = { id: string; uuid: string; properties: string; is_identified: boolean; created_at: Date };

const toPersonRow = (r: PersonRow) => ({ id: Number(r.id), uuid: r.uuid, properties: JSON.parse(r.properties), isIdentified: r.is_identified, createdAt: r.created_at.getTime() });

/** Per project, the person uuids and distinct ids a flush wrote: what other processes read again. */
function changedKeys(written: PersonChanges): Map<number, { persons: string[]; distinctIds: string[] }> {
  const byTeam = new Map<number, { persons: string[]; distinctIds: string[] }>();
  const of = (teamId: number) => {
    let keys = byTeam.get(teamId);
    if (!keys) byTeam.set(teamId, (keys = { persons: [], distinctIds: [] }));
    return keys;
  };
  for (const p of written.persons) of(p.teamId).persons.push(p.uuid);
  for (const d of written.distinctIds) of(d.teamId).distinctIds.push(d.distinctId);
  // A group's change reaches others when they next load the project.
  return byTeam;
}

const ROWS_PER_STATEMENT = 5_000;
/** Any constant shared by every hogbase process: with a project's id, held while its group types are given indexes. */
const GROUP_TYPES_LOCK = 0x67727470; // 'grtp'
const FIRST_BLOCK = 64;
const LARGEST_BLOCK = 10_000;

/** Rows a load fetches at a time from its cursor. */
export const LOAD_PAGE_ROWS = 10_000;

/** The rows of `query` handed to `onPage` a page at a time, through a cursor of the transaction. */
async function readPages<T>(tx: PgTx, query: string, params: readonly unknown[], onPage: (rows: T[]) => void): Promise<void> {
  await tx.run(`DECLARE load_rows NO SCROLL CURSOR FOR ${query}`, params);
  for (;;) {
    const rows = await tx.query<T>(`FETCH ${LOAD_PAGE_ROWS} FROM load_rows`);
    if (rows.length) onPage(rows);
    if (rows.length < LOAD_PAGE_ROWS) break;
  }
  await tx.run('CLOSE load_rows');
}

/**
 * Persons, distinct ids and groups in PostgreSQL, behind the in-memory person store
 * (persons/person-store.ts): a project is loaded once, and each flush writes what changed as a
 * few statements whose rows travel as one JSON text (PostgreSQL unpacks it with
 * json_to_recordset), like the DuckDB store's staging.
 *
 * A person gets its id in memory, when an event creates it, so ids are reserved from the
 * sequence ahead of need, in blocks that grow with use; two server processes never get the
 * same one. A batch that needs more than the reserve gets provisional ids (below 0) that the
 * next write replaces before anything is stored.
 */
export function createPostgresPersonHome(pg: Pg, changes: Changes, onError: (error: unknown) => void = () => undefined): PersonHome {
  let reserved: number[] = [];
  let next = 0;
  let block = FIRST_BLOCK;
  let takenSinceReserve = 0;
  let provisional = 0;
  let reserving: Promise<void> | null = null;

  const reserve = async (count: number) =>
    (await pg.query<{ id: string }>('SELECT nextval(\'person_id_seq\') AS id FROM generate_series(1, $1)', [count])).map((r) => Number(r.id));

  async function writePersons(tx: PgTx, changes: PersonChanges['persons']) {
    const gone = changes.filter((c) => !c.person).map((c) => c.uuid);
    if (gone.length) await tx.run('DELETE FROM persons WHERE uuid = ANY($1::uuid[])', [gone]);
    const present = changes.flatMap((c) => (c.person ? [c.person] : []));
    const needIds = present.filter((p) => p.id < 0);
    if (needIds.length) (await reserve(needIds.length)).forEach((id, i) => (needIds[i].id = id));
    const created = new Set(changes.filter((c) => c.created).map((c) => c.uuid));
    const recordset = `json_to_recordset($1::text::json) AS x(id bigint, uuid uuid, team_id integer, properties json, is_identified boolean, created_ms bigint)`;
    const createdAt = `'epoch'::timestamptz + x.created_ms * interval '1 millisecond'`;
    for (const chunk of chunks(present, ROWS_PER_STATEMENT)) {
      const rows = (persons: typeof chunk) =>
        JSON.stringify(persons.map((p) => ({ id: p.id, uuid: p.uuid, team_id: p.teamId, properties: p.properties, is_identified: p.isIdentified, created_ms: Math.round(p.createdAt) })));
      const made = chunk.filter((p) => created.has(p.uuid));
      const known = chunk.filter((p) => !created.has(p.uuid));
      if (made.length) {
        await tx.run(
          `INSERT INTO persons (id, uuid, team_id, properties, is_identified, created_at) SELECT x.id, x.uuid, x.team_id, x.properties, x.is_identified, ${createdAt} FROM ${recordset}
           ON CONFLICT (uuid) DO UPDATE SET properties = excluded.properties, is_identified = excluded.is_identified, created_at = excluded.created_at`,
          [rows(made)],
        );
      }
      // A person this process knew before is updated where its row still is: one another process
      // deleted (an erasure, a merge), whose notice has not reached this one yet, stays deleted.
      if (known.length) {
        await tx.run(
          `UPDATE persons SET properties = x.properties, is_identified = x.is_identified, created_at = ${createdAt} FROM ${recordset}
           WHERE persons.uuid = x.uuid AND persons.team_id = x.team_id`,
          [rows(known)],
        );
      }
    }
  }

  async function writeDistinctIds(tx: PgTx, changes: PersonChanges['distinctIds']) {
    // A link is written only to a person whose row is there (written just before, or kept); it
    // is locked first, so a delete of it under way in another process is waited for and then
    // seen (`FOR KEY SHARE`: a statement's snapshot alone would miss it, and the foreign key
    // would then fail the whole write). Unlinks need no statement: the rows of a person deleted
    // (here, or elsewhere) went with it (the foreign key's cascade), and a row that points at a
    // live person is another process's link made since this one's change (a merge that moved
    // the id, a new link), which deleting would undo.
    const linked = changes.filter((c) => c.personUuid !== null);
    for (const chunk of chunks(linked, ROWS_PER_STATEMENT)) {
      const rows = JSON.stringify(chunk.map((c) => ({ team_id: c.teamId, distinct_id: c.distinctId, person_uuid: c.personUuid })));
      await tx.run(
        `INSERT INTO person_distinct_ids (team_id, distinct_id, person_uuid)
         SELECT team_id, distinct_id, person_uuid FROM json_to_recordset($1::text::json) AS x(team_id integer, distinct_id text, person_uuid uuid)
         WHERE EXISTS (SELECT 1 FROM persons p WHERE p.uuid = x.person_uuid FOR KEY SHARE)
         ON CONFLICT (team_id, distinct_id) DO UPDATE SET person_uuid = excluded.person_uuid`,
        [rows],
      );
    }
  }

  /**
   * Each group's type index as the home gives it (`group_type_mapping`): a type new to the home
   * gets the index this process gave it when no other type holds it there, else the lowest free
   * one. Processes see a new type apart and each numbers it from what it holds, so two could give
   * one index to two types; the home settles it, under a lock of the project's types, and the
   * groups written (memory's own objects) take the home's index, as a provisional person id
   * takes its real one.
   */
  async function settleGroupTypes(tx: PgTx, changes: PersonChanges['groups']) {
    const wanted = new Map<number, Map<string, number>>();
    for (const { teamId, group } of changes) {
      let types = wanted.get(teamId);
      if (!types) wanted.set(teamId, (types = new Map()));
      if (!types.has(group.groupType)) types.set(group.groupType, group.groupTypeIndex);
    }
    // Projects in one order in every process: two locking the same two wait, never deadlock.
    for (const [teamId, types] of [...wanted].sort((a, b) => a[0] - b[0])) {
      let held = await groupTypesOf(tx, teamId);
      if ([...types.keys()].some((type) => !held.has(type))) {
        await tx.run('SELECT pg_advisory_xact_lock($1, $2)', [GROUP_TYPES_LOCK, teamId]);
        held = await groupTypesOf(tx, teamId);
        const taken = new Set(held.values());
        for (const [type, mine] of types) {
          if (held.has(type)) continue;
          // The index this process gave it, unless the home has it taken (or a failed write left none).
          const index = mine >= 0 && mine < MAX_GROUP_TYPES && !taken.has(mine) ? mine : freeGroupTypeIndex(taken);
          // The project has five types at the home already (two processes met new ones apart):
          // as in PostHog, this type's groups are not recorded.
          if (index === null) continue;
          taken.add(index);
          held.set(type, index);
          await tx.run('INSERT INTO group_type_mapping (team_id, group_type, group_type_index) VALUES ($1, $2, $3)', [teamId, type, index]);
        }
      }
      for (const { teamId: t, group } of changes) if (t === teamId) group.groupTypeIndex = held.get(group.groupType) ?? NO_GROUP_TYPE_INDEX;
    }
  }

  async function groupTypesOf(tx: PgTx, teamId: number): Promise<Map<string, number>> {
    const rows = await tx.query<{ group_type: string; group_type_index: number }>('SELECT group_type, group_type_index FROM group_type_mapping WHERE team_id = $1', [teamId]);
    return new Map(rows.map((r) => [r.group_type, Number(r.group_type_index)]));
  }

  async function writeGroups(tx: PgTx, changes: PersonChanges['groups']) {
    if (changes.length) await settleGroupTypes(tx, changes);
    const recorded = changes.filter(({ group }) => group.groupTypeIndex !== NO_GROUP_TYPE_INDEX);
    for (const chunk of chunks(recorded, ROWS_PER_STATEMENT)) {
      const rows = chunk.map(({ teamId, group }) => ({ team_id: teamId, group_type: group.groupType, group_type_index: group.groupTypeIndex, group_key: group.groupKey, properties: group.properties }));
      await tx.run(
        `INSERT INTO groups (team_id, group_type, group_type_index, group_key, properties, created_at)
         SELECT team_id, group_type, group_type_index, group_key, properties, now()
         FROM json_to_recordset($1::text::json) AS x(team_id integer, group_type text, group_type_index integer, group_key text, properties json)
         ON CONFLICT (team_id, group_type, group_key) DO UPDATE SET properties = excluded.properties, group_type_index = excluded.group_type_index`,
        [JSON.stringify(rows)],
      );
    }
  }

  return {
    async load(teamId, into) {
      // One snapshot, read through cursors a page at a time: the rows of a large project are
      // never all in memory as results beside the persons made of them (see bench/NOTES.md).
      await pg.transaction(async (tx) => {
        await tx.run('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
        await readPages<PersonRow>(tx, 'SELECT id, uuid::text AS uuid, properties::text AS properties, is_identified, created_at FROM persons WHERE team_id = $1', [teamId], (rows) =>
          into.persons(rows.map(toPersonRow)),
        );
        await readPages<{ distinct_id: string; person_uuid: string }>(
          tx,
          'SELECT distinct_id, person_uuid::text AS person_uuid FROM person_distinct_ids WHERE team_id = $1',
          [teamId],
          (rows) => into.distinctIds(rows.map((r) => ({ distinctId: r.distinct_id, personUuid: r.person_uuid }))),
        );
        await readPages<{ group_type: string; group_type_index: number; group_key: string; properties: string }>(
          tx,
          'SELECT group_type, group_type_index, group_key, properties::text AS properties FROM groups WHERE team_id = $1',
          [teamId],
          (rows) => into.groups(rows.map((g) => ({ groupType: g.group_type, groupTypeIndex: g.group_type_index, groupKey: g.group_key, properties: JSON.parse(g.properties) }))),
        );
      });
    },

    async write(changed) {
      if (!changed.persons.length && !changed.distinctIds.length && !changed.groups.length) return;
      // Another process's write can deadlock with this one (merges the other way round, a
      // delete's cascade meeting a link): the attempt PostgreSQL breaks off runs again at once.
      // What an attempt set on memory's objects is set again or stays valid: ids taken from the
      // sequence are never handed out twice, and group type indexes are settled afresh.
      await pg.transaction(async (tx) => {
        // Nothing of a project deleted meanwhile (by another process) is written back.
        const live = await lockLiveProjects(tx, [...changed.persons, ...changed.distinctIds, ...changed.groups].map((c) => c.teamId));
        const written: PersonChanges = {
          persons: changed.persons.filter((c) => live.has(c.teamId)),
          distinctIds: changed.distinctIds.filter((c) => live.has(c.teamId)),
          groups: changed.groups.filter((c) => live.has(c.teamId)),
        };
        await writePersons(tx, written.persons);
        await writeDistinctIds(tx, written.distinctIds);
        await writeGroups(tx, written.groups);
        for (const [teamId, keys] of changedKeys(written)) await changes.publish(tx, { kind: 'persons', teamId, keys });
      }, { retryConflicts: true });
    },

    async deleteTeam(teamId) {
      await pg.transaction(async (tx) => {
        for (const table of ['person_distinct_ids', 'persons', 'groups', 'group_type_mapping']) await tx.run(`DELETE FROM ${table} WHERE team_id = $1`, [teamId]);
        await changes.publish(tx, { kind: 'persons', teamId });
      });
    },

    onChange(listener) {
      changes.subscribe('persons', ({ teamId, keys }) => teamId !== undefined && listener(teamId, keys ?? null));
      changes.onMissed(() => listener(null, null));
    },

    async loadSome(teamId, personUuids, distinctIds) {
      const owners = await pg.query<{ distinct_id: string; person_uuid: string }>(
        'SELECT distinct_id, person_uuid::text AS person_uuid FROM person_distinct_ids WHERE team_id = $1 AND (distinct_id = ANY($2::text[]) OR person_uuid = ANY($3::uuid[]))',
        [teamId, [...distinctIds], personUuids.filter(isUuid)],
      );
      const wanted = [...new Set([...personUuids, ...owners.map((o) => o.person_uuid)])].filter(isUuid);
      const persons = await pg.query<PersonRow>(
        'SELECT id, uuid::text AS uuid, properties::text AS properties, is_identified, created_at FROM persons WHERE team_id = $1 AND uuid = ANY($2::uuid[])',
        [teamId, wanted],
      );
      return {
        persons: persons.map(toPersonRow),
        distinctIds: owners.map((r) => ({ distinctId: r.distinct_id, personUuid: r.person_uuid })),
        groups: [],
      };
    },

    takeId() {
      takenSinceReserve++;
      if (next < reserved.length) return reserved[next++];
      return --provisional;
    },

    needsIds: () => reserved.length - next < block / 2,

    reserveIds() {
      // Never fails the batch it runs before: without ids, new persons get provisional ones.
      reserving ??= (async () => {
        try {
          // Sized by the use since the last reservation: a busy process reserves more at a time.
          block = Math.min(Math.max(FIRST_BLOCK, 2 * takenSinceReserve), LARGEST_BLOCK);
          takenSinceReserve = 0;
          const ids = await reserve(block);
          reserved = [...reserved.slice(next), ...ids];
          next = 0;
        } catch (error) {
          onError(error);
        } finally {
          reserving = null;
        }
      })();
      return reserving;
    },
  };
}
