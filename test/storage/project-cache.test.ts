import { describe, expect, test } from 'bun:test';
import type { ManagementStore, Principal, Project } from '../../src/storage/management/types';
import { createProjectCache } from '../../src/storage/project-cache';

/** A management store whose answers can be changed, counting the database reads it would make. */
function fakeStore() {
  const state = { revoked: false, projectName: 'First' };
  const reads = { authenticateKey: 0, getProject: 0, findProjectByToken: 0 };
  const principal = { user: { id: 1 }, keyId: 'k1', memberships: new Map([['org-1', 8]]) } as unknown as Principal;
  const project = () => ({ id: 7, name: state.projectName, organization_id: 'org-1' }) as unknown as Project;
  const store = {
    async authenticateKey(secret: string) {
      reads.authenticateKey++;
      return secret === 'phx_good' && !state.revoked ? principal : null;
    },
    async getProject(id: number, orgs: string[]) {
      reads.getProject++;
      return id === 7 && orgs.includes('org-1') ? project() : null;
    },
    async findProjectByToken(token: string) {
      reads.findProjectByToken++;
      return token === 'phc_good' ? project() : null;
    },
    async revokePersonalApiKey() {
      state.revoked = true;
      return true;
    },
    async updateProject(_id: number, patch: { name?: string }) {
      state.projectName = patch.name ?? state.projectName;
      return project();
    },
  } as unknown as ManagementStore;
  return { store, state, reads };
}

describe('management cache', () => {
  test('an authenticated key and its project are read once, then served from memory', async () => {
    const f = fakeStore();
    const { management } = createProjectCache(f.store);
    for (let i = 0; i < 5; i++) {
      expect(await management.authenticateKey('phx_good')).not.toBeNull();
      expect((await management.getProject(7, ['org-1']))?.name).toBe('First');
    }
    expect(await management.getProject(7, ['org-2'])).toBeNull(); // another caller's organizations: its own entry
    expect(f.reads).toEqual({ authenticateKey: 1, getProject: 2, findProjectByToken: 0 });
  });

  test('a write through the store clears everything: a revoked key stops working at once, a renamed project is seen', async () => {
    const f = fakeStore();
    const { management, cache } = createProjectCache(f.store);
    expect(await management.authenticateKey('phx_good')).not.toBeNull();
    expect((await cache.byToken('phc_good'))?.name).toBe('First');
    expect((await management.getProject(7, ['org-1']))?.name).toBe('First');
    await management.revokePersonalApiKey('k1');
    expect(await management.authenticateKey('phx_good')).toBeNull();
    await management.updateProject(7, { name: 'Renamed' });
    expect((await cache.byToken('phc_good'))?.name).toBe('Renamed');
    expect((await management.getProject(7, ['org-1']))?.name).toBe('Renamed');
  });

  test('an unknown personal key is asked again every time (a key created a moment later must work)', async () => {
    const f = fakeStore();
    const { management } = createProjectCache(f.store);
    expect(await management.authenticateKey('phx_unknown')).toBeNull();
    expect(await management.authenticateKey('phx_unknown')).toBeNull();
    expect(f.reads.authenticateKey).toBe(2);
  });

  test('an answer fetched while a write happens is not remembered past the write', async () => {
    const f = fakeStore();
    const { management } = createProjectCache(f.store);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const authenticate = f.store.authenticateKey.bind(f.store);
    (f.store as { authenticateKey: ManagementStore['authenticateKey'] }).authenticateKey = async (secret) => {
      const answer = await authenticate(secret); // read before the revoke…
      await gate; // …answered after it
      return answer;
    };
    const inFlight = management.authenticateKey('phx_good');
    await management.revokePersonalApiKey('k1');
    release();
    expect(await inFlight).not.toBeNull(); // that request raced the revoke
    expect(await management.authenticateKey('phx_good')).toBeNull(); // the next one sees it
  });

  test('misses for one token while its read is under way share that read; a write in between starts a new one', async () => {
    const f = fakeStore();
    const { management, cache } = createProjectCache(f.store);
    const burst = await Promise.all(Array.from({ length: 64 }, () => cache.byToken('phc_good')));
    expect(burst.every((p) => p?.name === 'First')).toBe(true);
    expect(f.reads.findProjectByToken).toBe(1);

    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const find = f.store.findProjectByToken.bind(f.store);
    (f.store as { findProjectByToken: ManagementStore['findProjectByToken'] }).findProjectByToken = async (token) => {
      const answer = await find(token);
      await gate;
      return answer;
    };
    await management.updateProject(7, { name: 'Renamed' }); // clears the cache
    const before = [cache.byToken('phc_good'), cache.byToken('phc_good')];
    await management.updateProject(7, { name: 'Again' }); // a write while that read is under way
    const after = cache.byToken('phc_good');
    release();
    expect((await Promise.all(before)).map((p) => p?.name)).toEqual(['Renamed', 'Renamed']);
    expect((await after)?.name).toBe('Again');
    expect(f.reads.findProjectByToken).toBe(3);
    expect((await cache.byToken('phc_good'))?.name).toBe('Again'); // the read begun after the write is the one remembered
    expect(f.reads.findProjectByToken).toBe(3);
  });
});
