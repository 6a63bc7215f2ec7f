import { afterEach, beforeEach, expect, test } from 'bun:test';
import type { InviteInput } from '../../../src/storage/invites/types';
import { forEachEngine, type Opened } from './engines';

const T1 = new Date('2024-05-01T10:00:00Z');
const T2 = new Date('2024-05-02T10:00:00Z');
const invite = (targetEmail: string, extra: Partial<InviteInput> = {}): InviteInput => ({ targetEmail, firstName: '', message: null, level: 1, ...extra });

/** InviteStore: organization invites. */
forEachEngine('invite store', (engine) => {
  let opened: Opened;
  let orgA: string;
  let orgB: string;
  beforeEach(async () => {
    opened = await engine.open();
    orgA = (await opened.stores.management.createAccount({ email: 'a@example.com', organizationName: 'A' })).organization.id;
    orgB = (await opened.stores.management.createAccount({ email: 'b@example.com', organizationName: 'B' })).organization.id;
  });
  afterEach(async () => {
    await opened.close();
  });
  const invites = () => opened.stores.invites;
  const page = { limit: 100, offset: 0 };

  test('create and list newest first; a later invite for the same address replaces the earlier, whatever its case', async () => {
    const [first] = await invites().createInvites(orgA, [invite('ada@example.com', { firstName: 'Ada', message: 'hi', level: 8 })], 1, T1);
    expect(first).toEqual({
      id: first.id,
      organizationId: orgA,
      targetEmail: 'ada@example.com',
      firstName: 'Ada',
      message: 'hi',
      level: 8,
      emailingAttemptMade: false,
      createdBy: 1,
      createdAt: T1,
      updatedAt: T1,
    });
    const later = await invites().createInvites(orgA, [invite('bob@example.com'), invite('ADA@example.com'), invite('bob@example.com', { firstName: 'Bob' })], 1, T2);
    expect(later.map((i) => [i.targetEmail, i.firstName])).toEqual([['ADA@example.com', ''], ['bob@example.com', 'Bob']]);
    const listed = await invites().listInvites(orgA, page);
    expect(listed.count).toBe(2);
    expect(listed.results.map((i) => i.targetEmail).sort()).toEqual(['ADA@example.com', 'bob@example.com']);
    expect((await invites().listInvites(orgA, { limit: 1, offset: 1 })).results).toHaveLength(1);
  });

  test('organizations are apart; deleting needs the invite in the organization', async () => {
    const [a] = await invites().createInvites(orgA, [invite('ada@example.com')], 1, T1);
    const [b] = await invites().createInvites(orgB, [invite('ada@example.com')], 2, T1);
    expect((await invites().listInvites(orgB, page)).results).toEqual([b]);
    expect(await invites().deleteInvite(orgB, a.id)).toBe(false);
    expect(await invites().deleteInvite(orgA, 'not-a-uuid')).toBe(false);
    expect(await invites().deleteInvite('not-a-uuid', a.id)).toBe(false);
    expect(await invites().listInvites('not-a-uuid', page)).toEqual({ count: 0, results: [] });
    expect(await invites().deleteInvite(orgA, a.id)).toBe(true);
    expect(await invites().deleteInvite(orgA, a.id)).toBe(false);
    expect((await invites().listInvites(orgA, page)).count).toBe(0);
    opened = await opened.reopen();
    expect((await invites().listInvites(orgB, page)).results).toEqual([b]);
  });
});
