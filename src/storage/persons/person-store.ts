import { storableJson, wellFormed, wellFormedJson } from '../../core/ingest/well-formed';
import type { DuckDBConnection } from '@duckdb/node-api';
import { freeGroupTypeIndex, planPersonUpdates, type PersonLookup, type PersonOperation, type PersonRecord } from '../../core/ingest/person-updates';
import { uuidv7 } from '../../ids';
import { chunks } from '../chunks';
import { inTransaction, type Database } from '../db';
import { NO_GROUP_TYPE_INDEX, type Group, type Person, type PersonChanges, type PersonHome, type PersonMirror, type PersonStore } from './types';

interface TeamPersons {
  persons: Map<string, Person>;
  byDistinctId: Map<string, Person>;
  groups: Map<string, Group>;
  groupTypes: Map<string, number>;
}

const groupKey = (type: string, key: string) => `${type}\u0000${key}`;

/** A loaded distinct id joined to its loaded person (one whose person is gone is left out). */
function joinLoadedId(t: TeamPersons, distinctId: string, personUuid: string): void {
  const p = t.persons.get(personUuid);
  if (!p) return;
  p.distinctIds.push(distinctId);
  t.byDistinctId.set(distinctId, p);
}

/** A distinct id moved to `owner` in memory (null: unlinked), both persons' lists kept in step; whether it moved. */
function relinkId(t: TeamPersons, distinctId: string, owner: Person | null): boolean {
  const previous = t.byDistinctId.get(distinctId) ?? null;
  if (previous === owner) return false;
  if (previous) previous.distinctIds = previous.distinctIds.filter((d) => d !== distinctId);
  if (owner) {
    owner.distinctIds.push(distinctId);
    t.byDistinctId.set(distinctId, owner);
  } else t.byDistinctId.delete(distinctId);
  return true;
}

function addGroup(t: TeamPersons, g: Group): void {
  t.groupTypes.set(g.groupType, g.groupTypeIndex);
  t.groups.set(groupKey(g.groupType, g.groupKey), g);
}

/**
 * Group type indexes as the home gives them (`fromHome`: type → index). A type numbered here and
 * not written yet that holds one of those indexes moves to the lowest index free here (its write
 * then takes the home's): one index never names two types in this process's mapping.
 */
function takeHomeGroupTypes(t: TeamPersons, fromHome: ReadonlyMap<string, number>): void {
  for (const [type, index] of fromHome) t.groupTypes.set(type, index);
  const homeIndexes = new Set(fromHome.values());
  for (const [type, index] of t.groupTypes) {
    if (fromHome.has(type) || !homeIndexes.has(index)) continue;
    // None free (the home holds five): out of the mapping; its write is then refused (writeChanges).
    const free = freeGroupTypeIndex(t.groupTypes.values());
    if (free === null) t.groupTypes.delete(type);
    else t.groupTypes.set(type, free);
  }
}

/**
 * Rows from one JSON parameter, parsed by DuckDB's from_json on its own threads (an appender
 * would cost the main thread a call per value and a synchronous close; see bench/NOTES.md).
 */
const staged = (shape: string) => `(SELECT unnest(from_json(?::JSON, '[${shape}]'), recursive := true)) AS s`;
const STAGED_PERSONS = staged('{"id":"BIGINT","uuid":"UUID","team_id":"INTEGER","properties":"JSON","is_identified":"BOOLEAN","created_ms":"BIGINT"}');
const STAGED_DISTINCT_IDS = staged('{"team_id":"INTEGER","distinct_id":"VARCHAR","person_uuid":"UUID"}');

/**
 * Persons written in one statement: a person the table holds is updated in place, where a delete
 * and insert cost several times the CPU on a checkpointed table, most of it in the indexes and at
 * the commit (see bench/NOTES.md). A row under the uuid with another id or project is left as it
 * is (and counted out: see replacePersons).
 */
const MERGE_PERSONS = `MERGE INTO persons
  USING ${STAGED_PERSONS}
  ON persons.uuid = s.uuid
  WHEN MATCHED AND persons.id = s.id AND persons.team_id = s.team_id THEN
    UPDATE SET properties = s.properties, is_identified = s.is_identified, created_at = make_timestamp(s.created_ms * 1000)
  WHEN NOT MATCHED THEN INSERT (id, uuid, team_id, properties, is_identified, created_at, version)
    VALUES (s.id, s.uuid, s.team_id, s.properties, s.is_identified, make_timestamp(s.created_ms * 1000), 0)`;
const DELETE_PERSONS = `DELETE FROM persons WHERE uuid IN (SELECT unnest(from_json(?::JSON, '["UUID"]')))`;
const DELETE_PERSONS_WITH_IDS = `DELETE FROM persons WHERE id IN (SELECT unnest(from_json(?::JSON, '["BIGINT"]')))`;

const MERGE_DISTINCT_IDS = `MERGE INTO person_distinct_ids
  USING ${STAGED_DISTINCT_IDS}
  ON person_distinct_ids.team_id = s.team_id AND person_distinct_ids.distinct_id = s.distinct_id
  WHEN MATCHED THEN UPDATE SET person_uuid = s.person_uuid
  WHEN NOT MATCHED THEN INSERT (team_id, distinct_id, person_uuid) VALUES (s.team_id, s.distinct_id, s.person_uuid)`;
/** Rows the copy does not hold (see appendPersonsPart). */
const INSERT_PERSONS = `INSERT INTO persons (id, uuid, team_id, properties, is_identified, created_at, version)
  SELECT s.id, s.uuid, s.team_id, s.properties, s.is_identified, make_timestamp(s.created_ms * 1000), 0
  FROM ${STAGED_PERSONS}`;
const INSERT_DISTINCT_IDS = `INSERT INTO person_distinct_ids (team_id, distinct_id, person_uuid)
  SELECT s.team_id, s.distinct_id, s.person_uuid FROM ${STAGED_DISTINCT_IDS}`;
const DELETE_DISTINCT_IDS = `DELETE FROM person_distinct_ids
  WHERE (team_id, distinct_id) IN (SELECT (s.team_id, s.distinct_id) FROM ${staged('{"team_id":"INTEGER","distinct_id":"VARCHAR"}')})`;

/**
 * Rows staged as one statement's JSON at most: a project copied whole (loaded from the home) or a
 * large flush is written in parts, not as one text holding every row at once. DuckDB's memory
 * for a statement grows with its part, outside its own cap: 20,000-row parts took the process
 * hundreds of MB higher than 5,000-row ones (see bench/NOTES.md). A later part is made after the
 * earlier ones' awaits, so it may hold a person's newer state: that person is dirty again by
 * then, and the next flush writes the same state once more.
 */
export const STAGED_ROWS = 5_000;

/** A project's persons and its distinct ids as a load reads them from DuckDB (and a sync reads the copy back). */
const PERSON_ROWS = 'SELECT id, uuid::VARCHAR AS uuid, properties, is_identified, epoch_ms(created_at) AS created_ms FROM persons WHERE team_id = ?';
const DISTINCT_ID_ROWS = 'SELECT distinct_id, person_uuid::VARCHAR AS person_uuid FROM person_distinct_ids WHERE team_id = ?';
type PersonRow = { id: number; uuid: string; properties: string; is_identified: boolean; created_ms: number };
type DistinctIdRow = { distinct_id: string; person_uuid: string };
const GROUP_ROWS = 'SELECT group_type, group_type_index, group_key, properties FROM groups WHERE team_id = ?';
type GroupRow = { group_type: string; group_type_index: number; group_key: string; properties: string };

/** Whether a person's row in DuckDB's copy holds what memory holds (its properties compared as parsed: DuckDB may write JSON numbers differently). */
const sameAsCopied = (p: Person, r: PersonRow): boolean =>
  p.id === r.id && p.isIdentified === r.is_identified && p.createdAt === r.created_ms && JSON.stringify(p.properties) === JSON.stringify(JSON.parse(r.properties));

/**
 * Changes waiting to be written: person uuid → team (a person absent from its team's map is
 * deleted), distinct ids, groups, and which of the persons were made since they were last written.
 */
interface Pending {
  persons: Map<string, number>;
  distinctIds: Map<string, { teamId: number; distinctId: string }>;
  groups: Map<string, { teamId: number; group: Group }>;
  created: Set<string>;
}

const nothingPending = (): Pending => ({ persons: new Map(), distinctIds: new Map(), groups: new Map(), created: new Set() });
const pendingSize = (p: Pending) => p.persons.size + p.distinctIds.size + p.groups.size;
const pendsFor = (p: Pending, teamId: number) =>
  [...p.persons.values()].includes(teamId) || [...p.distinctIds.values()].some((v) => v.teamId === teamId) || [...p.groups.values()].some((v) => v.teamId === teamId);

/** `from`'s changes added to `into`, where `into` has none of its own for the key (those are newer). */
function keepPending(into: Pending, from: Pending): void {
  for (const [k, v] of from.persons) if (!into.persons.has(k)) into.persons.set(k, v);
  for (const [k, v] of from.distinctIds) if (!into.distinctIds.has(k)) into.distinctIds.set(k, v);
  for (const [k, v] of from.groups) if (!into.groups.has(k)) into.groups.set(k, v);
  for (const uuid of from.created) into.created.add(uuid);
}

function dropTeam(p: Pending, teamId: number): void {
  for (const [k, v] of p.persons) if (v === teamId) p.persons.delete(k);
  for (const [k, v] of p.distinctIds) if (v.teamId === teamId) p.distinctIds.delete(k);
  for (const [k, v] of p.groups) if (v.teamId === teamId) p.groups.delete(k);
}

/** A flush's home write succeeded and a later write (DuckDB's copy, the mirror) failed with `cause`. */
class CopyBehind extends Error {
  constructor(override readonly cause: unknown) {
    super('the copy of persons beside the events is behind their home');
  }
}

/** One person as an element of the JSON that MERGE_PERSONS and INSERT_PERSONS read. */
function personRow(p: Person, teamId: number): string {
  // A lone surrogate would fail this flush and every one after it: replaced (in memory too).
  const properties = storableJson(p.properties, (fixed) => (p.properties = fixed));
  return `{"id":${p.id},"uuid":${JSON.stringify(p.uuid)},"team_id":${teamId},"properties":${properties},"is_identified":${p.isIdentified},"created_ms":${Math.round(p.createdAt)}}`;
}

/**
 * Persons live in memory per project (loaded on first use) so ingestion and flag checks never
 * wait for the database; changes are collected per person and written in bulk by `flush`.
 * Memory grows with the number of persons (`npm run bench -- persons`: ~0.6–0.8 KB of heap a
 * person with posthog-js's initial properties).
 *
 * With a `home` (PostgreSQL), persons are loaded from it and every flush writes there first; the
 * DuckDB tables are then a copy for joins with events, made again for each project it loads.
 * With a `mirror` (ClickHouse holding the events), every flush and deletion is written there
 * too, last: a flush it fails is kept whole and tried again, so the copy misses nothing.
 */
export function createPersonStore(db: Database, home?: PersonHome, mirror?: PersonMirror): PersonStore {
  const teams = new Map<number, TeamPersons>();
  const loading = new Map<number, Promise<void>>();
  // Projects being deleted: a load asked for meanwhile waits for the deletion to end (started
  // during it, it would read rows the deletion has yet to remove, and keep them in memory).
  const deleting = new Map<number, Promise<void>>();
  // Changed since the last flush.
  let dirty = nothingPending();
  // Written to the home by a flush whose write of DuckDB's copy or of the mirror then failed:
  // written again to those two only. Kept apart from `dirty` so that another process's change to
  // them meanwhile is read into memory, not overwritten with this process's older state.
  let copyBehind = nothingPending();
  let nextId = 1;
  let flushing: Promise<void> | null = null;
  // Projects loaded while the mirror could not be seeded (see seedMirror).
  const unseeded = new Set<number>();
  // Projects to read again whole after the next flush (a `rereadAround` failed).
  const reread = new Set<number>();
  // Persons being deleted here (deletePerson), out of memory before the home has deleted them:
  // what the home still holds of them is not read back meanwhile (a notice, a project read again).
  const erasing = new Map<string, number>();
  // Reads of the home under way (a load, a project read again, a notice's read), each with the
  // persons whose deletion here ended while it ran: its snapshot may be older than the home's
  // delete, and the person must not come back from it (this process gets no notice of its own
  // delete to take them out again).
  // `read` is given `erasedHere`: whether a person it delivers is being erased here, or was
  // while it ran (either way it is skipped).
  const homeReads = new Set<Set<string>>();
  async function readingHome<T>(read: (erasedHere: (uuid: string) => boolean) => Promise<T>): Promise<T> {
    const erased = new Set<string>();
    homeReads.add(erased);
    try {
      return await read((uuid) => erasing.has(uuid) || erased.has(uuid));
    } finally {
      homeReads.delete(erased);
    }
  }

  /**
   * A distinct id of a person gone elsewhere (a notice, a project read again) goes to the owner
   * the home gives it, when the home still holds that person; a change of it waiting here is then
   * dropped (nothing of it is left to write). Without, it is unlinked, and a change waiting is
   * written so: an unlink writes nothing at the home (the rows of a person deleted there went with
   * it, and a row pointing at a live person is another process's later link: person-home.ts).
   */
  function takeHomeOwner(t: TeamPersons, teamId: number, distinctId: string, ownerUuid: string | undefined, homeHolds: (uuid: string) => boolean): void {
    const owner = ownerUuid !== undefined && homeHolds(ownerUuid) ? (t.persons.get(ownerUuid) ?? null) : null;
    relinkId(t, distinctId, owner);
    if (owner) dirty.distinctIds.delete(`${teamId}\u0000${distinctId}`);
  }

  const team = (teamId: number): TeamPersons => {
    const t = teams.get(teamId);
    if (!t) throw new Error(`persons of project ${teamId} are not loaded`);
    return t;
  };

  async function load(teamId: number) {
    if (home) return loadFromHome(teamId, home);
    const t: TeamPersons = { persons: new Map(), byDistinctId: new Map(), groups: new Map(), groupTypes: new Map() };
    const [{ max_id }] = await db.query<{ max_id: number | null }>('SELECT max(id) AS max_id FROM persons');
    nextId = Math.max(nextId, (max_id ?? 0) + 1);
    // A chunk at a time: a project's persons held whole as DuckDB's result and as rows too took
    // several times their own size at once (see bench/NOTES.md).
    await db.queryChunks<PersonRow>(
      PERSON_ROWS,
      [teamId],
      (rows) => {
        for (const r of rows) {
          t.persons.set(r.uuid, {
            id: r.id,
            uuid: r.uuid,
            teamId,
            properties: JSON.parse(r.properties),
            isIdentified: r.is_identified,
            createdAt: r.created_ms,
            distinctIds: [],
          });
        }
      },
    );
    await db.queryChunks<DistinctIdRow>(
      DISTINCT_ID_ROWS,
      [teamId],
      (ids) => {
        for (const r of ids) joinLoadedId(t, r.distinct_id, r.person_uuid);
      },
    );
    await db.queryChunks<GroupRow>(GROUP_ROWS, [teamId], (groups) => {
      for (const g of groups) addGroup(t, { groupType: g.group_type, groupTypeIndex: g.group_type_index, groupKey: g.group_key, properties: JSON.parse(g.properties) });
    });
    await seedMirror(teamId, t);
    teams.set(teamId, t);
  }

  async function loadFromHome(teamId: number, from: PersonHome) {
    const t: TeamPersons = { persons: new Map(), byDistinctId: new Map(), groups: new Map(), groupTypes: new Map() };
    // A person being deleted here, or deleted while the load ran, is not read back.
    await readingHome((erasedHere) => from.load(teamId, {
      persons: (rows) => {
        for (const r of rows) if (!erasedHere(r.uuid)) t.persons.set(r.uuid, { ...r, teamId, distinctIds: [] });
      },
      distinctIds: (rows) => {
        for (const r of rows) joinLoadedId(t, r.distinctId, r.personUuid);
      },
      groups: (rows) => {
        for (const g of rows) addGroup(t, g);
      },
    }));
    if (from.needsIds()) await from.reserveIds();
    await syncCopy(teamId, t);
    await seedMirror(teamId, t);
    teams.set(teamId, t);
  }

  /**
   * A project the mirror has never held (persons made before it existed: an upgrade, EVENTS_STORE
   * set on a server that had none) gets all its persons, once, as they are loaded; from then on
   * the flushes keep it. A load does not wait for an unreachable mirror (flags and ingestion need
   * the persons in memory, not the copy): the next flush seeds it first, and fails until it can.
   */
  async function seedMirror(teamId: number, t: TeamPersons) {
    if (!mirror) return;
    await mirror.seed(teamId, () => everyPerson(teamId, t)).catch(() => unseeded.add(teamId));
  }

  const everyPerson = (teamId: number, t: TeamPersons): PersonChanges => ({
    persons: [...t.persons.values()].map((person) => ({ teamId, uuid: person.uuid, person })),
    distinctIds: [...t.byDistinctId].map(([distinctId, p]) => ({ teamId, distinctId, personUuid: p.uuid })),
    groups: [],
  });

  /**
   * The DuckDB copy of a project's persons brought to what was loaded from the home. Only the
   * rows that differ are written: a restart usually finds the copy as it left it, and deleting
   * and inserting every row of a checkpointed table cost minutes for a large project (its
   * indexes; see bench/NOTES.md), where reading it back costs a load's time.
   */
  async function syncCopy(teamId: number, t: TeamPersons) {
    const all = new Map([[teamId, t]]);
    // Rows the copy holds that memory does not are deleted first, so no later write meets them.
    const gone = new Map<string, number>();
    const persons = new Map<string, number>();
    const ids = new Map<string, { teamId: number; distinctId: string }>();
    // A person made here whose id is still provisional (below 0: the home's reserve ran out) is
    // left to the flush that writes it, which gives it the home's id first: appended now, its row
    // would keep the provisional one (the flush's write of the copy updates a row it finds, id aside).
    const notCopied = new Set([...t.persons].flatMap(([uuid, p]) => (p.id < 0 ? [] : [uuid])));
    await db.queryChunks<PersonRow>(
      PERSON_ROWS,
      [teamId],
      (rows) => {
        for (const r of rows) {
          notCopied.delete(r.uuid);
          const p = t.persons.get(r.uuid);
          if (!p) gone.set(r.uuid, teamId);
          else if (!sameAsCopied(p, r)) persons.set(r.uuid, teamId);
        }
      },
    );
    const idsNotCopied = new Set(t.byDistinctId.keys());
    await db.queryChunks<DistinctIdRow>(
      DISTINCT_ID_ROWS,
      [teamId],
      (rows) => {
        for (const r of rows) {
          idsNotCopied.delete(r.distinct_id);
          if (t.byDistinctId.get(r.distinct_id)?.uuid !== r.person_uuid) ids.set(r.distinct_id, { teamId, distinctId: r.distinct_id });
        }
      },
    );
    // Groups too, so a group the copy holds as it is keeps its row (and its created_at).
    const groupsGone: Array<[type: string, key: string]> = [];
    const groups = new Map<string, { teamId: number; group: Group }>();
    const groupsNotCopied = new Set(t.groups.keys());
    await db.queryChunks<GroupRow>(GROUP_ROWS, [teamId], (rows) => {
      for (const r of rows) {
        const key = groupKey(r.group_type, r.group_key);
        groupsNotCopied.delete(key);
        const g = t.groups.get(key);
        if (!g) groupsGone.push([r.group_type, r.group_key]);
        else if (g.groupTypeIndex !== r.group_type_index || JSON.stringify(g.properties) !== JSON.stringify(JSON.parse(r.properties))) groups.set(key, { teamId, group: g });
      }
    });
    for (const key of groupsNotCopied) groups.set(key, { teamId, group: t.groups.get(key)! });
    await db.withWriter(async (c) => {
      await inTransaction(c, async () => {
        for (const [type, key] of groupsGone) await c.run('DELETE FROM groups WHERE team_id = ? AND group_type = ? AND group_key = ?', [teamId, type, key]);
        await replacePersons(c, gone, all);
        await replacePersons(c, persons, all);
        await replaceDistinctIds(c, ids, all);
        await replaceGroups(c, groups);
      });
    });
    // What the copy lacks (all of it on an empty DATA_DIR) comes last, appended a part a commit,
    // the writer lent a part at a time (other projects' flushes and the event loads go on
    // between): a load cut short leaves a copy the next one reads back and completes.
    for (const part of chunks(notCopied, STAGED_ROWS)) await db.withWriter((c) => appendPersonsPart(c, part, teamId, all));
    for (const part of chunks(idsNotCopied, STAGED_ROWS)) await db.withWriter((c) => appendDistinctIdsPart(c, part, teamId, t));
  }

  /**
   * Persons the copy does not hold, appended: a MERGE joins each part with the whole table and
   * costs more time and memory than an append (see bench/NOTES.md). A part that meets a row after
   * all (its uuid or id under another project or uuid: a copy older than the home, which gives
   * each id and uuid one person) fails as a whole; those rows are deleted and the part is written
   * as a flush writes it.
   */
  async function appendPersonsPart(c: DuckDBConnection, part: string[], teamId: number, from: Map<number, TeamPersons>) {
    const t = from.get(teamId)!;
    // A project read again while events go on (rereadAround) may have lost one since the part
    // was listed (a merge): its change waits for the next flush, which writes the copy.
    const uuids = part.filter((uuid) => t.persons.has(uuid));
    if (uuids.length === 0) return;
    try {
      await c.run(INSERT_PERSONS, [`[${uuids.map((uuid) => personRow(t.persons.get(uuid)!, teamId)).join(',')}]`]);
    } catch {
      await inTransaction(c, async () => {
        await c.run(DELETE_PERSONS_WITH_IDS, [JSON.stringify(uuids.map((uuid) => t.persons.get(uuid)!.id))]);
        await replacePersonsPart(c, uuids.map((uuid): [string, number] => [uuid, teamId]), from);
      });
    }
  }

  /**
   * Distinct ids the copy does not hold, appended. Their key is the project's and the id's, and the
   * copy's rows of the project were all read before: none can be in the way (nothing writes the
   * project's rows before its load is done).
   */
  async function appendDistinctIdsPart(c: DuckDBConnection, part: string[], teamId: number, t: TeamPersons) {
    // As for persons: one unlinked since the part was listed waits for the next flush.
    const distinctIds = part.filter((d) => t.byDistinctId.has(d));
    if (distinctIds.length === 0) return;
    const rows = distinctIds.map((distinctId) => `{"team_id":${teamId},"distinct_id":${JSON.stringify(distinctId)},"person_uuid":${JSON.stringify(t.byDistinctId.get(distinctId)!.uuid)}}`);
    await c.run(INSERT_DISTINCT_IDS, [wellFormedJson(`[${rows.join(',')}]`)]);
  }

  /** Whether changes of the project wait for a flush (to the home, or to the copy and mirror only). */
  const hasPending = (teamId: number) => pendsFor(dirty, teamId) || pendsFor(copyBehind, teamId);

  /**
   * Another process changed persons in the home: what this one holds of them is read again (a
   * person or distinct id with a change of this process's own not yet flushed keeps it), in
   * memory and in the DuckDB copy. Without keys, the project is dropped and loaded again when
   * next needed.
   *
   * Runs in turn with flushes (in `flushing`'s place): a flush under way has committed before the
   * home is read, and none starts while memory is patched, so what is read is never older than
   * what this process wrote. A project being loaded is loaded first (the load may have read the
   * rows before the change).
   */
  async function refresh(teamId: number | null, keys: { persons: string[]; distinctIds: string[] } | null) {
    // Changes missed (teamId null): every load under way may have read before them, and is ended
    // before the projects are dropped.
    const loads = teamId === null ? [...loading.values()] : [loading.get(teamId)];
    await Promise.all(loads.map((load) => load?.catch(() => undefined)));
    while (flushing) await flushing.catch(() => undefined);
    const run = patchFromHome(teamId, keys);
    const turn: Promise<void> = run
      .catch(() => undefined)
      .finally(() => {
        if (flushing === turn) flushing = null;
      });
    flushing = turn;
    return run;
  }

  async function patchFromHome(teamId: number | null, keys: { persons: string[]; distinctIds: string[] } | null) {
    if (teamId === null || keys === null) {
      // A project nothing of which waits for the next flush is dropped, and loaded again when
      // next needed; one with changes waiting is read again whole around them.
      const ids = teamId === null ? [...teams.keys()] : [teamId];
      for (const id of ids) if (!hasPending(id)) teams.delete(id);
      // One that fails is read again after the next flush (`reread`); the others go on.
      for (const id of ids) if (teams.has(id)) await rereadAround(id).catch(() => undefined);
      return;
    }
    if (!teams.has(teamId)) return;
    // The persons erased here while the read runs are collected until memory is patched.
    await readingHome((erasedHere) => patchKeys(teamId, keys, erasedHere));
  }

  async function patchKeys(teamId: number, keys: { persons: string[]; distinctIds: string[] }, erasedHere: (uuid: string) => boolean) {
    // The distinct ids held by the persons named too: one of a person gone elsewhere goes where
    // the home has it now, which a notice of an erasure does not name.
    const before = teams.get(teamId);
    const asked = [...new Set([...keys.distinctIds, ...keys.persons.flatMap((uuid) => before?.persons.get(uuid)?.distinctIds ?? [])])];
    const rows = await home!.loadSome(teamId, keys.persons, asked);
    const t = teams.get(teamId);
    if (!t) return;
    const fresh = new Map(rows.persons.map((r) => [r.uuid, r]));
    const owners = new Map(rows.distinctIds.map((r) => [r.distinctId, r.personUuid]));
    const touchedPersons = new Map<string, number>();
    const touchedIds = new Map<string, { teamId: number; distinctId: string }>();
    // Distinct ids of persons gone elsewhere, unlinked here.
    const orphaned = new Set<string>();
    for (const uuid of new Set([...keys.persons, ...fresh.keys()])) {
      const row = fresh.get(uuid);
      const held = t.persons.get(uuid);
      // A person deleted (or merged away) elsewhere stays deleted, whatever this process changed
      // of them since: its next flush must not write them back.
      if (!row) {
        dirty.persons.delete(uuid);
        if (!held) continue;
        t.persons.delete(uuid);
        // Their distinct ids too, in the copy as well: one this process linked to them since is
        // in no notice (the home did not take the link).
        for (const d of held.distinctIds) {
          if (t.byDistinctId.get(d) !== held) continue;
          t.byDistinctId.delete(d);
          orphaned.add(d);
          touchedIds.set(`${teamId}\u0000${d}`, { teamId, distinctId: d });
        }
      } else if (dirty.persons.has(uuid) || erasedHere(uuid)) continue;
      else if (held) Object.assign(held, { id: row.id, properties: row.properties, isIdentified: row.isIdentified, createdAt: row.createdAt });
      else t.persons.set(uuid, { ...row, teamId, distinctIds: [] });
      touchedPersons.set(uuid, teamId);
    }
    for (const distinctId of new Set([...keys.distinctIds, ...owners.keys(), ...orphaned])) {
      const key = `${teamId}\u0000${distinctId}`;
      if (dirty.distinctIds.has(key) && !orphaned.has(distinctId)) continue;
      takeHomeOwner(t, teamId, distinctId, owners.get(distinctId), (uuid) => fresh.has(uuid));
      touchedIds.set(key, { teamId, distinctId });
    }
    try {
      await db.withWriter((c) =>
        inTransaction(c, async () => {
          await replacePersons(c, touchedPersons);
          await replaceDistinctIds(c, touchedIds);
        }),
      );
    } catch (error) {
      // Memory holds them already: the copy is written at the next flush.
      keepPending(copyBehind, { persons: touchedPersons, distinctIds: touchedIds, groups: new Map(), created: new Set() });
      throw error;
    }
  }

  /**
   * A project read again whole from the home, keeping this process's changes not flushed yet
   * (the keys `dirty` names): every other person, distinct id and group becomes what the home
   * holds, and what the home no longer holds goes (a person made here and not written yet
   * stays). For changes missed while changes of the project's own wait: dropping the project
   * would lose them, and keeping it as it was kept other processes' changes out for good (and
   * its next writes of those persons put their older state back). Runs in a refresh's turn;
   * events processed meanwhile change memory and `dirty` as usual, and are kept. DuckDB's copy
   * is then brought to memory as a load brings it. If it fails, the project is read again after
   * the next flush.
   */
  async function rereadAround(teamId: number) {
    const t = teams.get(teamId)!;
    const homePersons = new Set<string>();
    // Every distinct id the home holds, and its owner there.
    const homeIds = new Map<string, string>();
    const homeGroups = new Set<string>();
    const homeTypes = new Map<string, number>();
    const idKey = (d: string) => `${teamId}\u0000${d}`;
    try {
      await readingHome((erasedHere) => home!.load(teamId, {
        persons: (rows) => {
          for (const r of rows) {
            homePersons.add(r.uuid);
            if (dirty.persons.has(r.uuid) || erasedHere(r.uuid)) continue;
            const held = t.persons.get(r.uuid);
            if (held) Object.assign(held, { id: r.id, properties: r.properties, isIdentified: r.isIdentified, createdAt: r.createdAt });
            else t.persons.set(r.uuid, { ...r, teamId, distinctIds: [] });
          }
        },
        distinctIds: (rows) => {
          for (const r of rows) {
            homeIds.set(r.distinctId, r.personUuid);
            if (!dirty.distinctIds.has(idKey(r.distinctId))) relinkId(t, r.distinctId, t.persons.get(r.personUuid) ?? null);
          }
        },
        groups: (rows) => {
          for (const g of rows) {
            const key = groupKey(g.groupType, g.groupKey);
            homeGroups.add(key);
            homeTypes.set(g.groupType, g.groupTypeIndex);
            if (!dirty.groups.has(`${teamId}\u0000${key}`)) addGroup(t, g);
          }
        },
      }));
      if (teams.get(teamId) !== t || deleting.has(teamId)) return;
      // A person the home no longer holds was deleted or merged away elsewhere: gone here too,
      // whatever this process changed of them since (as a notice naming them does), unless made
      // here and not written yet; their distinct ids go where the home has them.
      for (const [uuid, p] of t.persons) {
        if (homePersons.has(uuid) || dirty.created.has(uuid)) continue;
        t.persons.delete(uuid);
        dirty.persons.delete(uuid);
        for (const d of [...p.distinctIds]) if (t.byDistinctId.get(d) === p) takeHomeOwner(t, teamId, d, homeIds.get(d), (owner) => homePersons.has(owner));
      }
      for (const d of [...t.byDistinctId.keys()]) if (!homeIds.has(d) && !dirty.distinctIds.has(idKey(d))) relinkId(t, d, null);
      for (const key of [...t.groups.keys()]) if (!homeGroups.has(key) && !dirty.groups.has(`${teamId}\u0000${key}`)) t.groups.delete(key);
      takeHomeGroupTypes(t, homeTypes);
      await syncCopy(teamId, t);
      reread.delete(teamId);
    } catch (error) {
      reread.add(teamId);
      throw error;
    }
  }

  /** The projects whose `rereadAround` failed, read again (a flush succeeded: the home answers again). */
  function retryRereads() {
    for (const id of [...reread]) {
      reread.delete(id);
      void refresh(id, null).catch(() => undefined);
    }
  }

  home?.onChange((teamId, keys) => {
    refresh(teamId, keys).catch(() => {
      // Not read again: the project is dropped (unless changes of its wait: then it is read again
      // whole after the next flush), and loaded whole when next needed.
      if (teamId === null) return;
      if (!hasPending(teamId)) teams.delete(teamId);
      else if (teams.has(teamId)) reread.add(teamId);
    });
  });

  const lookupFor = (t: TeamPersons): PersonLookup => ({
    lookup(distinctId): PersonRecord | null {
      const p = t.byDistinctId.get(distinctId);
      return p ? { personId: p.uuid, properties: p.properties, isIdentified: p.isIdentified, createdAt: p.createdAt } : null;
    },
  });

  function apply(teamId: number, t: TeamPersons, op: PersonOperation) {
    switch (op.type) {
      case 'create_person': {
        const p: Person = { id: home ? home.takeId() : nextId++, uuid: op.personId, teamId, properties: op.properties, isIdentified: op.isIdentified, createdAt: op.createdAt, distinctIds: [] };
        t.persons.set(p.uuid, p);
        dirty.persons.set(p.uuid, teamId);
        dirty.created.add(p.uuid);
        for (const d of op.distinctIds) linkDistinctId(teamId, t, p, d);
        return;
      }
      case 'add_distinct_id':
        linkDistinctId(teamId, t, t.persons.get(op.personId)!, op.distinctId);
        return;
      case 'update_person': {
        const p = t.persons.get(op.personId)!;
        p.properties = op.properties;
        p.isIdentified = op.isIdentified;
        dirty.persons.set(p.uuid, teamId);
        return;
      }
      case 'merge_persons': {
        const from = t.persons.get(op.fromPersonId)!;
        const into = t.persons.get(op.intoPersonId)!;
        for (const d of from.distinctIds) linkDistinctId(teamId, t, into, d);
        t.persons.delete(from.uuid);
        dirty.persons.set(from.uuid, teamId);
        into.properties = op.properties;
        into.isIdentified = true;
        into.createdAt = op.createdAt;
        dirty.persons.set(into.uuid, teamId);
        return;
      }
      case 'upsert_group': {
        let index = t.groupTypes.get(op.groupType);
        if (index === undefined) {
          // The lowest index no type holds here (with a home, the home may give another: writeChanges).
          const free = freeGroupTypeIndex(t.groupTypes.values());
          if (free === null) return;
          index = free;
          t.groupTypes.set(op.groupType, index);
        }
        const k = groupKey(op.groupType, op.groupKey);
        const current = t.groups.get(k);
        const group: Group = { groupType: op.groupType, groupTypeIndex: index, groupKey: op.groupKey, properties: { ...current?.properties, ...op.properties } };
        t.groups.set(k, group);
        dirty.groups.set(`${teamId}\u0000${k}`, { teamId, group });
        return;
      }
    }
  }

  function linkDistinctId(teamId: number, t: TeamPersons, p: Person, distinctId: string) {
    if (!relinkId(t, distinctId, p)) return;
    dirty.distinctIds.set(`${teamId}\u0000${distinctId}`, { teamId, distinctId });
  }

  /** The changes `pending` names, as memory holds them now. */
  const changesOf = (pending: Pending): PersonChanges => ({
    persons: [...pending.persons].map(([uuid, teamId]) => ({ teamId, uuid, person: teams.get(teamId)?.persons.get(uuid) ?? null, created: pending.created.has(uuid) })),
    distinctIds: [...pending.distinctIds.values()].map(({ teamId, distinctId }) => ({ teamId, distinctId, personUuid: teams.get(teamId)?.byDistinctId.get(distinctId)?.uuid ?? null })),
    groups: [...pending.groups.values()],
  });

  /**
   * The group type indexes the home gave a flush's groups (it numbers them for every process: two
   * may have given one index to two types) taken into memory; a group of a type the home refused
   * (the project's five taken meanwhile) is recorded here no more, nor written to the copy. The
   * groups the home recorded.
   */
  function takeHomeNumbering(written: PersonChanges['groups'], pending: Pending): PersonChanges['groups'] {
    const settled = new Map<number, Map<string, number>>();
    for (const { teamId, group } of written) {
      const t = teams.get(teamId);
      if (group.groupTypeIndex === NO_GROUP_TYPE_INDEX) {
        const key = groupKey(group.groupType, group.groupKey);
        if (t?.groups.get(key) === group) t.groups.delete(key);
        if (t && ![...t.groups.values()].some((g) => g.groupType === group.groupType)) t.groupTypes.delete(group.groupType);
        pending.groups.delete(`${teamId}\u0000${key}`);
        continue;
      }
      let types = settled.get(teamId);
      if (!types) settled.set(teamId, (types = new Map()));
      types.set(group.groupType, group.groupTypeIndex);
    }
    for (const [teamId, types] of settled) {
      const t = teams.get(teamId);
      if (t) takeHomeGroupTypes(t, types);
    }
    return written.filter(({ group }) => group.groupTypeIndex !== NO_GROUP_TYPE_INDEX);
  }

  /**
   * `pending` to the home, then with `behind` to DuckDB's copy and the mirror. Rejects with
   * CopyBehind when the home took `pending` and a later write failed.
   */
  async function writeChanges(pending: Pending, behind: Pending) {
    // Built only for an engine beside DuckDB (none by default).
    const changes = home || mirror ? changesOf(pending) : null;
    if (home) {
      await home.write(changes!);
      changes!.groups = takeHomeNumbering(changes!.groups, pending);
    }
    // Usually nothing is behind: the flush's own changes, as the home took them, serve the copy and the mirror.
    let copy = pending;
    if (pendingSize(behind)) {
      copy = nothingPending();
      keepPending(copy, pending);
      keepPending(copy, behind);
    }
    try {
      await db.withWriter((c) =>
        inTransaction(c, async () => {
          await replacePersons(c, copy.persons);
          await replaceDistinctIds(c, copy.distinctIds);
          await replaceGroups(c, copy.groups);
        }),
      );
      if (mirror) {
        for (const teamId of unseeded) {
          const t = teams.get(teamId);
          if (t) await mirror.seed(teamId, () => everyPerson(teamId, t));
          unseeded.delete(teamId);
        }
        await mirror.write(copy === pending ? changes! : changesOf(copy));
      }
    } catch (error) {
      throw home ? new CopyBehind(error) : error;
    }
  }

  async function replacePersons(c: DuckDBConnection, dirty: Map<string, number>, from = teams) {
    for (const part of chunks(dirty, STAGED_ROWS)) await replacePersonsPart(c, part, from);
  }

  async function replacePersonsPart(c: DuckDBConnection, dirty: ReadonlyArray<[uuid: string, teamId: number]>, from: Map<number, TeamPersons>) {
    const gone: string[] = [];
    const keys: string[] = [];
    const rows: string[] = [];
    for (const [uuid, teamId] of dirty) {
      const p = from.get(teamId)?.persons.get(uuid);
      if (!p) gone.push(uuid);
      else {
        keys.push(uuid);
        rows.push(personRow(p, teamId));
      }
    }
    if (gone.length) await c.run(DELETE_PERSONS, [JSON.stringify(gone)]);
    if (!rows.length) return;
    const json = `[${rows.join(',')}]`;
    const { rowsChanged } = await c.run(MERGE_PERSONS, [json]);
    // A row the merge left (its uuid under another id or project) is replaced as before.
    if (rowsChanged === rows.length) return;
    await c.run(DELETE_PERSONS, [JSON.stringify(keys)]);
    await c.run(MERGE_PERSONS, [json]);
  }

  async function replaceDistinctIds(c: DuckDBConnection, dirty: Map<string, { teamId: number; distinctId: string }>, from = teams) {
    for (const part of chunks(dirty.values(), STAGED_ROWS)) await replaceDistinctIdsPart(c, part, from);
  }

  async function replaceDistinctIdsPart(c: DuckDBConnection, dirty: ReadonlyArray<{ teamId: number; distinctId: string }>, from: Map<number, TeamPersons>) {
    const gone: string[] = [];
    const rows: string[] = [];
    for (const { teamId, distinctId } of dirty) {
      const key = `"team_id":${teamId},"distinct_id":${JSON.stringify(distinctId)}`;
      const p = from.get(teamId)?.byDistinctId.get(distinctId);
      if (!p) gone.push(`{${key}}`);
      else rows.push(`{${key},"person_uuid":${JSON.stringify(p.uuid)}}`);
    }
    // Distinct ids come through the capture decoder, which leaves no lone surrogate, but one would
    // fail every flush (DuckDB's JSON refuses its escape): U+FFFD, as the appender's UTF-8 wrote it.
    if (gone.length) await c.run(DELETE_DISTINCT_IDS, [wellFormedJson(`[${gone.join(',')}]`)]);
    if (rows.length) await c.run(MERGE_DISTINCT_IDS, [wellFormedJson(`[${rows.join(',')}]`)]);
  }

  async function replaceGroups(c: DuckDBConnection, dirty: Map<string, { teamId: number; group: Group }>) {
    for (const { teamId, group } of dirty.values()) {
      // As for persons: a lone surrogate would fail this flush and every one after it.
      const properties = storableJson(group.properties, (fixed) => (group.properties = fixed));
      await c.run(
        `INSERT INTO groups (team_id, group_type, group_type_index, group_key, properties, created_at) VALUES (?, ?, ?, ?, ?, now())
         ON CONFLICT (team_id, group_type, group_key) DO UPDATE SET group_type_index = excluded.group_type_index, properties = excluded.properties`,
        [teamId, group.groupType, group.groupTypeIndex, group.groupKey, properties],
      );
    }
  }

  return {
    ensureLoaded(teamId) {
      if (teams.has(teamId)) return home?.needsIds() ? home.reserveIds() : Promise.resolve();
      const deletion = deleting.get(teamId);
      if (deletion) return deletion.catch(() => undefined).then(() => this.ensureLoaded(teamId));
      let p = loading.get(teamId);
      if (!p) {
        p = load(teamId).finally(() => loading.delete(teamId));
        loading.set(teamId, p);
      }
      return p;
    },
    isLoaded: (teamId) => teams.has(teamId),

    processEvent(teamId, event, personIdHint) {
      const t = team(teamId);
      const newId = () => (personIdHint && !t.persons.has(personIdHint) ? personIdHint : uuidv7(event.timestamp));
      const plan = planPersonUpdates(event, lookupFor(t), newId);
      for (const op of plan.operations) apply(teamId, t, op);
      return plan;
    },

    findByDistinctId: (teamId, distinctId) => teams.get(teamId)?.byDistinctId.get(distinctId) ?? null,
    findByUuid: (teamId, uuid) => teams.get(teamId)?.persons.get(uuid) ?? null,
    findById(teamId, id) {
      for (const p of teams.get(teamId)?.persons.values() ?? []) if (p.id === id) return p;
      return null;
    },
    listPersons(teamId, where, page) {
      const kept = [...team(teamId).persons.values()].filter(where);
      kept.sort((a, b) => b.createdAt - a.createdAt || b.id - a.id);
      return { count: kept.length, results: kept.slice(page.offset, page.offset + page.limit) };
    },
    setProperties(teamId, uuid, set) {
      const t = team(teamId);
      const p = t.persons.get(uuid);
      if (!p) return null;
      // From the private API: a lone surrogate is replaced here, for either engine's flush.
      apply(teamId, t, { type: 'update_person', personId: uuid, properties: { ...p.properties, ...(wellFormed(set) as typeof set) }, isIdentified: p.isIdentified });
      return p;
    },
    groupTypeMapping: (teamId) => Object.fromEntries(teams.get(teamId)?.groupTypes ?? []),
    findGroup: (teamId, type, key) => teams.get(teamId)?.groups.get(groupKey(type, key)) ?? null,
    pendingChanges: () => pendingSize(dirty) + pendingSize(copyBehind),

    flush() {
      // Waits for the flush under way, then writes what is pending (or waits for the flush
      // another caller started for it): a second caller never returns before its changes are written.
      if (flushing) return flushing.catch(() => undefined).then(() => this.flush());
      if (!pendingSize(dirty) && !pendingSize(copyBehind) && !unseeded.size) {
        if (reread.size) retryRereads();
        return Promise.resolve();
      }
      const pending = dirty;
      const behind = copyBehind;
      dirty = nothingPending();
      copyBehind = nothingPending();
      flushing = writeChanges(pending, behind)
        .then(() => {
          if (reread.size) retryRereads();
        })
        .catch((error) => {
          // Keep what failed, under anything changed since: for the home too unless it took it.
          keepPending(error instanceof CopyBehind ? copyBehind : dirty, pending);
          keepPending(copyBehind, behind);
          throw error instanceof CopyBehind ? error.cause : error;
        })
        .finally(() => {
          flushing = null;
        });
      return flushing;
    },

    async deletePerson(teamId, uuid, distinctIds = []) {
      await this.ensureLoaded(teamId);
      // Their changes still in memory (distinct ids a merge moved to them) reach the tables
      // first, so the delete below finds every row of theirs.
      await this.flush();
      const t = team(teamId);
      const p = t.persons.get(uuid) ?? null;
      const ids = [...new Set([...distinctIds, ...(p?.distinctIds ?? [])])];
      erasing.set(uuid, (erasing.get(uuid) ?? 0) + 1);
      let deletedAtHome = false;
      try {
        if (p) {
          // Out of memory: no event processed from here on finds the person, and no flush
          // started from here on writes them back.
          t.persons.delete(uuid);
          for (const d of p.distinctIds) if (t.byDistinctId.get(d) === p) t.byDistinctId.delete(d);
          dirty.persons.delete(uuid);
          for (const d of p.distinctIds) dirty.distinctIds.delete(`${teamId}\u0000${d}`);
        }
        // A flush that read them before is committed before the delete below, not after it.
        await this.flush();
        // The home first (it is what a restart loads); a distinct id a live person has taken since
        // is written as theirs, not deleted.
        const gone: PersonChanges = {
          persons: [{ teamId, uuid, person: null }],
          distinctIds: ids.map((distinctId) => ({ teamId, distinctId, personUuid: t.byDistinctId.get(distinctId)?.uuid ?? null })),
          groups: [],
        };
        await home?.write(gone);
        deletedAtHome = true;
        // Before DuckDB's rows go: a failure here fails the erasure, whose job runs it again.
        if (mirror) {
          await mirror.write(gone);
          await mirror.erase(teamId, uuid);
        }
        // By uuid, and their distinct ids still pointing at a person that is gone (one merged into
        // them meanwhile); never a distinct id a live person has taken since (events after this).
        await db.transaction(async (tx) => {
          await tx.run(
            `DELETE FROM person_distinct_ids WHERE team_id = ? AND (person_uuid = TRY_CAST(? AS UUID) OR (distinct_id IN (SELECT unnest(from_json(CAST(? AS JSON), '["VARCHAR"]')))
             AND person_uuid NOT IN (SELECT uuid FROM persons WHERE team_id = ?)))`,
            [teamId, uuid, JSON.stringify(ids), teamId],
          );
          await tx.run('DELETE FROM persons WHERE team_id = ? AND uuid = TRY_CAST(? AS UUID)', [teamId, uuid]);
        });
        return p;
      } finally {
        // Reads of the home begun before its delete committed may still deliver the person.
        if (deletedAtHome) for (const erased of homeReads) erased.add(uuid);
        const left = (erasing.get(uuid) ?? 1) - 1;
        if (left > 0) erasing.set(uuid, left);
        else erasing.delete(uuid);
      }
    },

    deleteTeam(teamId) {
      const under = deleting.get(teamId);
      if (under) return under;
      const run = (async () => {
        // A load under way ends first: finishing after the deletes below, it would put the
        // project back in memory and its rows back in DuckDB's copy.
        await loading.get(teamId)?.catch(() => undefined);
        await this.flush().catch(() => undefined);
        teams.delete(teamId);
        unseeded.delete(teamId);
        reread.delete(teamId);
        dropTeam(dirty, teamId);
        dropTeam(copyBehind, teamId);
        await home?.deleteTeam(teamId);
        await mirror?.deleteTeam(teamId);
        await db.transaction(async (tx) => {
          await tx.run('DELETE FROM person_distinct_ids WHERE team_id = ?', [teamId]);
          await tx.run('DELETE FROM persons WHERE team_id = ?', [teamId]);
          await tx.run('DELETE FROM groups WHERE team_id = ?', [teamId]);
          // An erasure cut short has nothing left to do once its project is gone.
          await tx.run('DELETE FROM person_erasures WHERE team_id = ?', [teamId]);
        });
      })().finally(() => deleting.delete(teamId));
      deleting.set(teamId, run);
      return run;
    },
  };
}
