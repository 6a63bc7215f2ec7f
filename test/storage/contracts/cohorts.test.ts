import { afterEach, beforeEach, expect, test } from 'bun:test';
import type { CohortInput } from '../../../src/storage/cohorts/types';
import { personEvent } from '../../helpers/person-event';
import { createProjects, eventually, forEachEngine, type Opened } from './engines';

const NOW = new Date('2024-05-01T10:00:00Z');
const filtersOf = (...values: Record<string, unknown>[]) => ({ properties: { type: 'AND', values } });
const PRO = filtersOf({ type: 'person', key: 'plan', operator: 'exact', value: 'pro' });
const FREE = filtersOf({ type: 'person', key: 'plan', operator: 'exact', value: 'free' });
const page = { limit: 100, offset: 0 };

let n = 0;
const ev = (distinctId: string, plan: string) =>
  personEvent({ uuid: `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`, distinctId, timestamp: 1_700_000_000_000 + n, set: { plan } });

/**
 * CohortStore: the definitions (the store under test), with the members a calculation derives
 * from persons beside the events, so the two halves are seen to agree.
 */
forEachEngine('cohort store', (engine) => {
  let opened: Opened;
  beforeEach(async () => {
    opened = await engine.open();
    await createProjects(opened.stores, 2);
    // Persons: alice and bob on pro in project 1, carol on free; dave on pro in project 2.
    const persons = opened.stores.persons;
    for (const [team, id, plan] of [[1, 'alice', 'pro'], [1, 'bob', 'pro'], [1, 'carol', 'free'], [2, 'dave', 'pro']] as const) {
      await persons.ensureLoaded(team);
      persons.processEvent(team, ev(id, plan));
    }
    await persons.flush();
  });
  afterEach(async () => {
    await opened.close();
  });
  const cohorts = () => opened.stores.cohorts;
  const uuidOf = (team: number, distinctId: string) => opened.stores.persons.findByDistinctId(team, distinctId)!.uuid;
  const members = async (team: number, id: number) => (await cohorts().listCohortPersons(team, id, page)).results.map((p) => p.distinctIds[0]).sort();
  const create = (team: number, input: CohortInput) => cohorts().createCohort(team, input, 7, NOW);

  test('create, read, list, update: the definition and its calculation state', async () => {
    const dynamic = await create(1, { name: 'Pro', description: 'Paying', filters: PRO });
    expect(dynamic).toEqual({
      id: dynamic.id,
      teamId: 1,
      name: 'Pro',
      description: 'Paying',
      groups: [],
      filters: PRO,
      deleted: false,
      isStatic: false,
      isCalculating: true,
      createdBy: 7,
      createdAt: NOW,
      lastCalculation: null,
      errorsCalculating: 0,
      count: null,
      version: 0,
      pendingVersion: null,
    });
    const fixed = await create(1, { name: 'Fixed', isStatic: true });
    expect([fixed.isStatic, fixed.isCalculating, fixed.filters]).toEqual([true, false, null]);
    expect(await cohorts().getCohort(1, dynamic.id)).toEqual(dynamic);
    expect((await cohorts().listCohorts(1, page)).results.map((c) => c.name)).toEqual(['Fixed', 'Pro']);
    expect(await cohorts().listCohorts(1, { limit: 1, offset: 1 })).toEqual({ count: 2, results: [dynamic] });

    await cohorts().scheduleCalculation(dynamic.id, NOW);
    const calculated = await cohorts().getCohort(1, dynamic.id);
    expect(calculated).toMatchObject({ isCalculating: false, count: 2, version: 1, lastCalculation: NOW, errorsCalculating: 0 });
    const renamed = await cohorts().updateCohort(1, dynamic.id, { name: 'Paying', filters: FREE });
    expect(renamed).toMatchObject({ name: 'Paying', filters: FREE, description: 'Paying', isCalculating: true, count: 2 });
    await cohorts().scheduleCalculation(dynamic.id, NOW);
    expect(await members(1, dynamic.id)).toEqual(['carol']);
    await cohorts().updateCohort(1, dynamic.id, { deleted: true });
    expect((await cohorts().listCohorts(1, page)).results.map((c) => c.name)).toEqual(['Fixed']);
    expect((await cohorts().getCohort(1, dynamic.id))?.deleted).toBe(true);
    expect(await cohorts().cohortIdsForPerson(1, uuidOf(1, 'carol'))).toEqual(new Set());
  });

  test('projects are apart: a cohort is neither read, listed nor calculated over another project', async () => {
    const pro = await create(1, { name: 'Pro', filters: PRO });
    const other = await create(2, { name: 'Pro there', filters: PRO });
    expect(await cohorts().getCohort(2, pro.id)).toBeNull();
    expect(await cohorts().getCohort(1, 2 ** 40)).toBeNull();
    expect((await cohorts().listCohorts(2, page)).results.map((c) => c.id)).toEqual([other.id]);
    await cohorts().scheduleCalculation(pro.id, NOW);
    await cohorts().scheduleCalculation(other.id, NOW);
    expect(await members(1, pro.id)).toEqual(['alice', 'bob']);
    expect(await members(2, other.id)).toEqual(['dave']);
    expect(await cohorts().cohortIdsForPerson(1, uuidOf(1, 'alice'))).toEqual(new Set([pro.id]));
    expect(await cohorts().cohortIdsForPerson(2, uuidOf(1, 'alice'))).toEqual(new Set());
    expect((await cohorts().listCohortPersons(2, pro.id, page)).count).toBe(0);
  });

  test('static cohorts: persons added by distinct id, removed one by one', async () => {
    const fixed = await create(1, { name: 'Fixed', isStatic: true });
    expect(await cohorts().addStaticPersons(1, fixed.id, 'distinct_id', ['alice', 'carol', 'dave', 'nobody'], NOW)).toBe(2);
    expect(await members(1, fixed.id)).toEqual(['alice', 'carol']);
    expect((await cohorts().getCohort(1, fixed.id))?.count).toBe(2);
    expect(await cohorts().removeStaticPerson(1, fixed.id, uuidOf(1, 'alice'), NOW)).toBe(true);
    expect(await cohorts().removeStaticPerson(1, fixed.id, uuidOf(1, 'alice'), NOW)).toBe(false);
    expect(await members(1, fixed.id)).toEqual(['carol']);
  });

  test('static cohorts: the members are kept with the definition (a restart, with PostgreSQL over an empty DuckDB, lists them and flags see them)', async () => {
    const fixed = await create(1, { name: 'Fixed', isStatic: true });
    await cohorts().addStaticPersons(1, fixed.id, 'distinct_id', ['alice', 'bob', 'carol'], NOW);
    await cohorts().removeStaticPerson(1, fixed.id, uuidOf(1, 'bob'), NOW);
    const before = await cohorts().listCohortPersons(1, fixed.id, page);
    opened = await opened.reopen();
    await opened.stores.persons.ensureLoaded(1);
    expect(await cohorts().listCohortPersons(1, fixed.id, page)).toEqual(before);
    expect(before.results.map((p) => p.distinctIds)).toEqual([['alice'], ['carol']]);
    expect(await cohorts().getCohort(1, fixed.id)).toMatchObject({ isStatic: true, count: 2 });
    expect(await cohorts().cohortIdsForPerson(1, uuidOf(1, 'carol'))).toEqual(new Set([fixed.id]));
    expect(await cohorts().cohortIdsForPerson(1, uuidOf(1, 'bob'))).toEqual(new Set());
    await cohorts().removePerson(1, uuidOf(1, 'carol'));
    opened = await opened.reopen();
    await opened.stores.persons.ensureLoaded(1);
    expect(await members(1, fixed.id)).toEqual(['alice']);
  });

  test('deleting a project removes its cohorts only; a restart reads the rest back (and calculates them again where members are kept beside new events)', async () => {
    const pro = await create(1, { name: 'Pro', filters: PRO });
    const other = await create(2, { name: 'Other', filters: PRO });
    await cohorts().scheduleCalculation(pro.id, NOW);
    await cohorts().deleteTeam(2);
    expect(await cohorts().getCohort(2, other.id)).toBeNull();
    opened = await opened.reopen();
    await cohorts().whenIdle();
    expect(await cohorts().getCohort(2, other.id)).toBeNull();
    expect(await cohorts().getCohort(1, pro.id)).toMatchObject({ name: 'Pro', filters: PRO, count: 2, isCalculating: false });
    expect(await members(1, pro.id)).toEqual(['alice', 'bob']);
    // New ids never reuse the deleted project's.
    expect((await create(2, { name: 'Again', filters: PRO })).id).toBeGreaterThan(other.id);
  });

  if (engine.name === 'postgres') {
    test("another process's changes: read at once, and its copy and members follow within a moment", async () => {
      const other = await opened.another();
      try {
        const pro = await create(1, { name: 'Pro', filters: PRO });
        await cohorts().scheduleCalculation(pro.id, NOW);
        const there = () => other.stores.cohorts;
        // The other process calculates it itself (its members are of its own events).
        expect(await eventually(() => there().getCohort(1, pro.id), (c) => c?.count === 2)).toMatchObject({ name: 'Pro', count: 2 });
        expect(await there().cohortIdsForPerson(1, uuidOf(1, 'alice'))).toEqual(new Set([pro.id]));
        await cohorts().updateCohort(1, pro.id, { name: 'Free', filters: FREE });
        expect((await there().getCohort(1, pro.id))?.name).toBe('Free');
        expect(await eventually(() => there().cohortIdsForPerson(1, uuidOf(1, 'carol')), (ids) => ids.has(pro.id))).toEqual(new Set([pro.id]));
        expect(await there().cohortIdsForPerson(1, uuidOf(1, 'alice'))).toEqual(new Set());
        await cohorts().updateCohort(1, pro.id, { deleted: true });
        expect(await eventually(() => there().cohortIdsForPerson(1, uuidOf(1, 'carol')), (ids) => ids.size === 0)).toEqual(new Set());
        const fixed = await create(1, { name: 'Fixed', isStatic: true });
        await cohorts().addStaticPersons(1, fixed.id, 'distinct_id', ['alice', 'dave'], NOW);
        await other.stores.persons.ensureLoaded(1);
        expect(await eventually(() => there().cohortIdsForPerson(1, uuidOf(1, 'alice')), (ids) => ids.has(fixed.id))).toEqual(new Set([fixed.id]));
        expect((await there().listCohortPersons(1, fixed.id, page)).results.map((p) => p.distinctIds)).toEqual([['alice']]);
        // Removed there: gone here too.
        expect(await there().removeStaticPerson(1, fixed.id, uuidOf(1, 'alice'), NOW)).toBe(true);
        expect(await eventually(() => cohorts().cohortIdsForPerson(1, uuidOf(1, 'alice')), (ids) => ids.size === 0)).toEqual(new Set());
        expect(await members(1, fixed.id)).toEqual([]);
        await there().whenIdle();
      } finally {
        await other.close();
      }
    });
  }
});
