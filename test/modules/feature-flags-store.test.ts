import { afterEach, beforeEach, describe, expect, test } from 'bun:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase, type Database } from '../../src/storage/db';
import { createFlagStore } from '../../src/storage/flags/flag-store';
import type { NewFlag } from '../../src/storage/flags/types';
import { migrate } from '../../src/storage/migrations';

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flags-'));
  db = await openDatabase(join(dir, 'db.duckdb'));
  await migrate(db);
});
afterEach(async () => {
  await db.close();
  await rm(dir, { recursive: true, force: true });
});

const NOW = new Date('2024-05-01T10:00:00Z');
const LATER = new Date('2024-05-02T10:00:00Z');
const flag = (key: string, extra: Partial<NewFlag> = {}): NewFlag => ({
  key,
  name: '',
  filters: { groups: [{ properties: [], rollout_percentage: 50 }] },
  active: true,
  ensureExperienceContinuity: false,
  createdBy: 1,
  ...extra,
});

describe('flag store', () => {
  test('create, update and the cached snapshot, replaced after every change', async () => {
    const store = createFlagStore(db);
    expect(store.cachedForTeam(1)).toBeUndefined();
    const empty = await store.forTeam(1);
    expect(empty.flags).toEqual([]);
    expect(await store.forTeam(1)).toBe(empty);
    // A flag check reads the snapshot without waiting once it is in memory.
    expect(store.cachedForTeam(1)).toBe(empty);

    const created = await store.create(1, flag('a'), NOW);
    expect(created).toEqual({
      id: created.id,
      teamId: 1,
      key: 'a',
      name: '',
      filters: { groups: [{ properties: [], rollout_percentage: 50 }] },
      active: true,
      deleted: false,
      ensure_experience_continuity: false,
      createdBy: 1,
      createdAt: NOW,
      updatedAt: NOW,
      version: 1,
    });
    expect(store.cachedForTeam(1)).toBeUndefined();
    const afterCreate = await store.forTeam(1);
    expect(afterCreate).not.toBe(empty);
    expect(store.cachedForTeam(1)).toBe(afterCreate);
    expect(afterCreate.flags).toEqual([created]);

    const updated = await store.update(1, created.id, { name: 'A', active: false }, LATER);
    expect(updated).toMatchObject({ name: 'A', active: false, version: 2, updatedAt: LATER, createdAt: NOW });
    expect((await store.forTeam(1)).flags).toEqual([updated!]);
    expect(await store.update(2, created.id, { name: 'other team' }, LATER)).toBeNull();
    expect((await store.forTeam(2)).flags).toEqual([]);
  });

  test('keys are unique among live flags; a soft-deleted holder is removed when the key is reused', async () => {
    const store = createFlagStore(db);
    const first = await store.create(1, flag('k'), NOW);
    await expect(store.create(1, flag('k'), NOW)).rejects.toMatchObject({ kind: 'unique', attr: 'key' });
    expect(await store.create(2, flag('k'), NOW)).toMatchObject({ teamId: 2, key: 'k' });
    await store.update(1, first.id, { deleted: true }, NOW);
    const second = await store.create(1, flag('k'), NOW);
    expect((await store.forTeam(1)).flags.map((f) => f.id)).toEqual([second.id]);
  });

  test('hash key overrides persist, and existing ones are never replaced', async () => {
    const store = createFlagStore(db);
    const person = '0190a000-0000-7000-8000-000000000001';
    await store.addHashKeyOverrides(1, person, { a: 'anon-1', b: 'anon-1' });
    await store.addHashKeyOverrides(1, person, { a: 'anon-2', c: 'anon-2' });
    expect((await store.hashKeyOverrides(1)).get(person)).toEqual({ a: 'anon-1', b: 'anon-1', c: 'anon-2' });
    expect(store.cachedHashKeyOverrides(1)).toBe(await store.hashKeyOverrides(1));
    const reopened = createFlagStore(db);
    expect((await reopened.hashKeyOverrides(1)).get(person)).toEqual({ a: 'anon-1', b: 'anon-1', c: 'anon-2' });
    expect((await reopened.hashKeyOverrides(2)).size).toBe(0);
  });

  test('deleteTeam removes flags and hash keys of that project only', async () => {
    const store = createFlagStore(db);
    await store.create(1, flag('a'), NOW);
    await store.create(2, flag('b'), NOW);
    await store.addHashKeyOverrides(1, '0190a000-0000-7000-8000-000000000001', { a: 'x' });
    await store.forTeam(1);
    await store.deleteTeam(1);
    expect(store.cachedForTeam(1)).toBeUndefined();
    expect(store.cachedHashKeyOverrides(1)).toBeUndefined();
    expect((await store.forTeam(1)).flags).toEqual([]);
    expect((await store.hashKeyOverrides(1)).size).toBe(0);
    expect((await createFlagStore(db).forTeam(2)).flags.map((f) => f.key)).toEqual(['b']);
  });
});
