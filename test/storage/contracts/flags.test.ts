import { afterEach, beforeEach, expect, test } from 'bun:test';
import { AppError } from '../../../src/errors';
import type { NewFlag } from '../../../src/storage/flags/types';
import { eventually, forEachEngine, type Opened } from './engines';

const NOW = new Date('2024-05-01T10:00:00Z');
const LATER = new Date('2024-05-02T10:00:00Z');
const PERSON = '0190c1a2-0000-7000-8000-000000000001';
const flag = (key: string, extra: Partial<NewFlag> = {}): NewFlag => ({
  key,
  name: `${key} flag`,
  filters: { groups: [{ properties: [], rollout_percentage: 50 }], payloads: { true: '{"b":1,"a":2}' } },
  active: true,
  ensureExperienceContinuity: false,
  createdBy: 7,
  ...extra,
});
const uniqueError = async (promise: Promise<unknown>) => {
  const error = await promise.then(() => null, (e: unknown) => e);
  expect(error).toBeInstanceOf(AppError);
  return [(error as AppError).kind, (error as AppError).detail, (error as AppError).attr];
};
const DUPLICATE = ['unique', 'There is already a feature flag with this key.', 'key'];

/** FlagStore: flags per project, cached snapshots, continuity hash keys. */
forEachEngine('flag store', (engine) => {
  let opened: Opened;
  beforeEach(async () => {
    opened = await engine.open();
  });
  afterEach(async () => {
    await opened.close();
  });
  const flags = () => opened.stores.flags;

  test('create, read, update; the snapshot is replaced after every change', async () => {
    const empty = await flags().forTeam(1);
    expect(empty.flags).toEqual([]);
    expect(flags().cachedForTeam(1)).toBe(empty);
    const created = await flags().create(1, flag('beta'), NOW);
    expect(created).toEqual({
      id: created.id,
      teamId: 1,
      key: 'beta',
      name: 'beta flag',
      filters: flag('beta').filters,
      active: true,
      deleted: false,
      ensure_experience_continuity: false,
      createdBy: 7,
      createdAt: NOW,
      updatedAt: NOW,
      version: 1,
    });
    // The stored JSON keeps its keys' order (PostHog payloads are compared as text by SDKs).
    expect(JSON.stringify((await flags().forTeam(1)).flags[0].filters)).toBe(JSON.stringify(flag('beta').filters));
    expect(flags().cachedForTeam(1)?.flags).toEqual([created]);
    const updated = await flags().update(1, created.id, { name: 'renamed', active: false, filters: { groups: [] } }, LATER);
    expect(updated).toEqual({ ...created, name: 'renamed', active: false, filters: { groups: [] }, updatedAt: LATER, version: 2 });
    expect((await flags().forTeam(1)).flags).toEqual([updated!]);
    expect(await flags().update(1, 424242, { name: 'x' }, LATER)).toBeNull();
    expect(await flags().update(1, 2 ** 40, { name: 'x' }, LATER)).toBeNull();
  });

  test('a key is unique among the live flags of a project only', async () => {
    const a = await flags().create(1, flag('a'), NOW);
    expect(await uniqueError(flags().create(1, flag('a'), NOW))).toEqual(DUPLICATE);
    // Another project may use it.
    expect((await flags().create(2, flag('a'), NOW)).teamId).toBe(2);
    const b = await flags().create(1, flag('b'), NOW);
    expect(await uniqueError(flags().update(1, b.id, { key: 'a' }, LATER))).toEqual(DUPLICATE);
    // Soft-deleting frees the key; a new flag with it removes the deleted one for good.
    await flags().update(1, a.id, { deleted: true }, LATER);
    const again = await flags().create(1, flag('a'), LATER);
    expect((await flags().forTeam(1)).flags.map((f) => [f.id, f.key, f.deleted])).toEqual([
      [b.id, 'b', false],
      [again.id, 'a', false],
    ]);
    // Renaming onto a key that only a deleted flag holds removes that flag for good too.
    const c = await flags().create(1, flag('c'), LATER);
    await flags().update(1, c.id, { deleted: true }, LATER);
    await flags().update(1, b.id, { key: 'c' }, LATER);
    expect(await flags().update(1, c.id, { deleted: false }, LATER)).toBeNull();
    expect((await flags().forTeam(2)).flags.map((f) => f.key)).toEqual(['a']);
  });

  test('hash keys: the first stored per person and flag stays; projects apart', async () => {
    expect(await flags().hashKeyOverrides(1)).toEqual(new Map());
    await flags().addHashKeyOverrides(1, PERSON, { beta: 'anon-1' });
    await flags().addHashKeyOverrides(1, PERSON, { beta: 'anon-2', gamma: 'anon-2' });
    expect(await flags().hashKeyOverrides(1)).toEqual(new Map([[PERSON, { beta: 'anon-1', gamma: 'anon-2' }]]));
    expect(flags().cachedHashKeyOverrides(1)).toEqual(new Map([[PERSON, { beta: 'anon-1', gamma: 'anon-2' }]]));
    expect(await flags().hashKeyOverrides(2)).toEqual(new Map());
  });

  test('deleting a project removes its flags and hash keys only; a restart reads them back', async () => {
    const kept = await flags().create(1, flag('kept'), NOW);
    await flags().create(2, flag('gone'), NOW);
    await flags().addHashKeyOverrides(1, PERSON, { kept: 'anon' });
    await flags().addHashKeyOverrides(2, PERSON, { gone: 'anon' });
    await flags().deleteTeam(2);
    expect((await flags().forTeam(2)).flags).toEqual([]);
    opened = await opened.reopen();
    expect((await flags().forTeam(1)).flags).toEqual([kept]);
    expect(await flags().hashKeyOverrides(1)).toEqual(new Map([[PERSON, { kept: 'anon' }]]));
    expect((await flags().forTeam(2)).flags).toEqual([]);
    expect(await flags().hashKeyOverrides(2)).toEqual(new Map());
  });

  if (engine.name === 'postgres') {
    test("another process's change replaces this one's cached snapshot within a moment", async () => {
      const other = await opened.another();
      try {
        const cached = await flags().forTeam(1);
        expect(cached.flags).toEqual([]);
        const created = await other.stores.flags.create(1, flag('remote'), NOW);
        expect((await eventually(() => flags().forTeam(1), (s) => s.flags.length === 1)).flags).toEqual([created]);
        await other.stores.flags.update(1, created.id, { active: false }, LATER);
        expect((await eventually(() => flags().forTeam(1), (s) => !s.flags[0].active)).flags[0].version).toBe(2);
        // Hash keys too: the other process's first value is the one both keep.
        expect(await flags().hashKeyOverrides(1)).toEqual(new Map());
        await other.stores.flags.addHashKeyOverrides(1, PERSON, { remote: 'theirs' });
        expect(await eventually(() => flags().cachedHashKeyOverrides(1), (h) => h === undefined)).toBeUndefined();
        await flags().addHashKeyOverrides(1, PERSON, { remote: 'mine' });
        expect(await flags().hashKeyOverrides(1)).toEqual(new Map([[PERSON, { remote: 'theirs' }]]));
        await other.stores.flags.deleteTeam(1);
        expect((await eventually(() => flags().forTeam(1), (s) => s.flags.length === 0)).flags).toEqual([]);
      } finally {
        await other.close();
      }
    });

    test('two processes creating one key at once: exactly one succeeds', async () => {
      const other = await opened.another();
      try {
        for (let round = 0; round < 5; round++) {
          const key = `race-${round}`;
          const results = await Promise.allSettled([flags().create(1, flag(key), NOW), other.stores.flags.create(1, flag(key), NOW)]);
          expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
          const failure = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
          expect([failure.reason.kind, failure.reason.attr]).toEqual(['unique', 'key']);
        }
      } finally {
        await other.close();
      }
    });
  }
});
