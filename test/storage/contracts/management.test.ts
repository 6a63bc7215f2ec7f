import { afterEach, beforeEach, expect, test } from 'bun:test';
import { AppError } from '../../../src/errors';
import { DEFAULT_PROJECT_SETTINGS, MEMBERSHIP_LEVEL } from '../../../src/storage';
import { eventually, forEachEngine, type Opened } from './engines';

/** ManagementStore: organizations, users, personal keys, projects. */
forEachEngine('management store', (engine) => {
  let opened: Opened;
  beforeEach(async () => {
    opened = await engine.open();
  });
  afterEach(async () => {
    await opened.close();
  });
  const m = () => opened.stores.management;
  const page = { limit: 100, offset: 0 };

  test('an account: organization, owner, project with the defaults, a key that authenticates', async () => {
    expect(await m().isEmpty()).toBe(true);
    const a = await m().createAccount({ email: 'ada@example.com', organizationName: 'Acme & Co', personalApiKey: 'phx_known_key_1', projectApiKey: 'phc_known_token_1' });
    expect(await m().isEmpty()).toBe(false);
    expect(a.organization).toMatchObject({ name: 'Acme & Co', slug: 'acme-co' });
    expect(a.project).toMatchObject({ name: 'Default project', apiToken: 'phc_known_token_1', organizationId: a.organization.id, ingestedEvent: false, settings: DEFAULT_PROJECT_SETTINGS });
    expect(a.user).toMatchObject({ email: 'ada@example.com', currentOrganizationId: a.organization.id, currentProjectId: a.project.id });
    expect(a.personalApiKey.value).toBe('phx_known_key_1');
    const principal = await m().authenticateKey('phx_known_key_1');
    expect(principal?.user).toEqual(a.user);
    expect(principal?.keyId).toBe(a.personalApiKey.id);
    expect(principal?.memberships).toEqual(new Map([[a.organization.id, MEMBERSHIP_LEVEL.owner]]));
    expect(await m().findUserByEmail('ada@example.com')).toEqual(a.user);
    expect(await m().findUserById(a.user.id)).toEqual(a.user);
    expect(await m().findUserById(999_999)).toBeNull();
    expect(await m().getOrganization(a.organization.id)).toEqual(a.organization);
    expect(await m().getOrganization('not-a-uuid')).toBeNull();
    expect(await m().findProjectByToken('phc_known_token_1')).toEqual(a.project);
    expect(await m().findProjectByToken('phc_unknown')).toBeNull();
  });

  test('the same e-mail in a second account is the same user, member of both organizations', async () => {
    const a = await m().createAccount({ email: 'ada@example.com', organizationName: 'One' });
    const b = await m().createAccount({ email: 'ada@example.com', organizationName: 'Two' });
    expect(b.user.id).toBe(a.user.id);
    const orgs = await m().listOrganizations(a.user.id);
    expect(orgs.map((o) => [o.name, o.level])).toEqual([['One', MEMBERSHIP_LEVEL.owner], ['Two', MEMBERSHIP_LEVEL.owner]]);
    expect((await m().listMembers(b.organization.id)).map((u) => u.id)).toEqual([a.user.id]);
    expect(await m().listMembers('junk')).toEqual([]);
    const users = await m().listUsers();
    expect(users.map((u) => [u.email, u.organizationNames, u.activeKeys])).toEqual([['ada@example.com', ['One', 'Two'], 2]]);
  });

  test('unique constraints: a project token, a personal key, an account key are refused with the API error', async () => {
    const a = await m().createAccount({ email: 'ada@example.com', organizationName: 'One', personalApiKey: 'phx_taken_key_1', projectApiKey: 'phc_taken_token_1' });
    const refused = async (promise: Promise<unknown>) => {
      const error = await promise.then(() => null, (e: unknown) => e);
      expect(error).toBeInstanceOf(AppError);
      return { kind: (error as AppError).kind, detail: (error as AppError).detail, attr: (error as AppError).attr };
    };
    expect(await refused(m().createProject(a.organization.id, 'Again', {}, 'phc_taken_token_1'))).toEqual({
      kind: 'unique',
      detail: 'A project with this API token already exists.',
      attr: 'api_token',
    });
    expect(await refused(m().createPersonalApiKey(a.user.id, 'dup', 'phx_taken_key_1'))).toEqual({
      kind: 'unique',
      detail: 'An API key with this value already exists.',
      attr: 'personal_api_key',
    });
    expect(await refused(m().createAccount({ email: 'bob@example.com', organizationName: 'Two', projectApiKey: 'phc_taken_token_1' }))).toEqual({
      kind: 'unique',
      detail: 'An API key with this value already exists.',
      attr: 'api_key',
    });
    // A refused account leaves nothing behind.
    expect(await m().findUserByEmail('bob@example.com')).toBeNull();
    expect((await m().listUsers()).length).toBe(1);
  });

  test('transactions: an account refused at its last statement (its key taken) leaves none of its earlier ones', async () => {
    const a = await m().createAccount({ email: 'ada@example.com', organizationName: 'One', personalApiKey: 'phx_taken_key_2' });
    const projects = await m().listAllProjects();
    // Ada's second organization: the organization, her membership, its project and her current
    // project are written before the key, which is taken: the whole account must be undone.
    const error = await m()
      .createAccount({ email: 'ada@example.com', organizationName: 'Two', personalApiKey: 'phx_taken_key_2' })
      .then(() => null, (e: unknown) => e);
    expect(error).toMatchObject({ kind: 'unique', attr: 'api_key' });
    expect(await m().findUserByEmail('ada@example.com')).toEqual(a.user);
    expect((await m().listOrganizations(a.user.id)).map((o) => o.name)).toEqual(['One']);
    expect(await m().listAllProjects()).toEqual(projects);
    expect((await m().listUsers()).map((u) => u.activeKeys)).toEqual([1]);
    // A new user refused the same way is not created at all.
    await m().createAccount({ email: 'bob@example.com', organizationName: 'Three', personalApiKey: 'phx_taken_key_2' }).catch(() => undefined);
    expect(await m().findUserByEmail('bob@example.com')).toBeNull();
    expect(await m().listAllProjects()).toEqual(projects);
  });

  test('personal keys: listed without secrets, revoked only by their owner, then refused', async () => {
    const a = await m().createAccount({ email: 'ada@example.com', organizationName: 'One' });
    const b = await m().createAccount({ email: 'bob@example.com', organizationName: 'Two' });
    const key = await m().createPersonalApiKey(a.user.id, 'ci');
    expect(key).toMatchObject({ userId: a.user.id, label: 'ci', revokedAt: null, lastUsedAt: null });
    expect(key.maskValue).toBe(`${key.value.slice(0, 4)}…${key.value.slice(-4)}`);
    const listed = await m().listPersonalApiKeys(a.user.id);
    expect(listed.map((k) => k.label)).toEqual(['Initial key', 'ci']);
    expect(Object.keys(listed[1])).not.toContain('value');
    expect(await m().revokePersonalApiKey(key.id, b.user.id)).toBe(false);
    expect(await m().authenticateKey(key.value)).not.toBeNull();
    expect(await m().revokePersonalApiKey(key.id, a.user.id)).toBe(true);
    expect(await m().revokePersonalApiKey(key.id, a.user.id)).toBe(false);
    expect(await m().authenticateKey(key.value)).toBeNull();
    expect((await m().listPersonalApiKeys(a.user.id))[1].revokedAt).toBeInstanceOf(Date);
    expect(await m().revokePersonalApiKey(b.personalApiKey.id)).toBe(true);
  });

  test('projects are seen only through their organization; pages, settings, deletion', async () => {
    const a = await m().createAccount({ email: 'ada@example.com', organizationName: 'One' });
    const b = await m().createAccount({ email: 'bob@example.com', organizationName: 'Two' });
    const second = await m().createProject(a.organization.id, 'Second', { anonymize_ips: true });
    expect(second.settings).toEqual({ ...DEFAULT_PROJECT_SETTINGS, anonymize_ips: true });
    expect(await m().getProject(second.id, [b.organization.id])).toBeNull();
    expect(await m().getProject(second.id, [])).toBeNull();
    expect(await m().getProject(2 ** 40, [a.organization.id])).toBeNull();
    expect(await m().getProject(second.id, [a.organization.id])).toEqual(second);
    const listed = await m().listProjects([a.organization.id], { limit: 1, offset: 1 });
    expect(listed).toEqual({ count: 2, results: [second] });
    expect((await m().listProjects([b.organization.id], page)).results.map((p) => p.id)).toEqual([b.project.id]);
    expect(await m().listProjects([], page)).toEqual({ count: 0, results: [] });
    expect((await m().listAllProjects()).map((p) => p.id)).toEqual([a.project.id, b.project.id, second.id]);

    const updated = await m().updateProject(second.id, { name: 'Renamed', settings: { timezone: 'Europe/Paris', events_retention_days: 30 } });
    expect(updated).toMatchObject({ name: 'Renamed', settings: { ...DEFAULT_PROJECT_SETTINGS, anonymize_ips: true, timezone: 'Europe/Paris', events_retention_days: 30 } });
    expect((await m().updateProject(second.id, { settings: { events_retention_days: null } })).settings.events_retention_days).toBeNull();
    expect(updated.updatedAt.getTime()).toBeGreaterThanOrEqual(second.updatedAt.getTime());

    await m().markIngested(second.id);
    expect((await m().findProjectByToken(second.apiToken))?.ingestedEvent).toBe(true);
    await m().setCurrentProject(a.user.id, a.organization.id, second.id);
    expect((await m().findUserById(a.user.id))?.currentProjectId).toBe(second.id);
    await m().deleteProject(second.id);
    expect(await m().findProjectByToken(second.apiToken)).toBeNull();
    expect((await m().findUserById(a.user.id))?.currentProjectId).toBeNull();
    expect((await m().getProject(a.project.id, [a.organization.id]))?.name).toBe('Default project');
  });

  test('everything is there again after a restart', async () => {
    const a = await m().createAccount({ email: 'ada@example.com', organizationName: 'One', personalApiKey: 'phx_restart_key_1' });
    const project = await m().createProject(a.organization.id, 'Kept', { anonymize_ips: true });
    opened = await opened.reopen();
    expect(await m().findProjectByToken(project.apiToken)).toEqual(project);
    expect((await m().authenticateKey('phx_restart_key_1'))?.user.id).toBe(a.user.id);
    expect(await m().getOrganization(a.organization.id)).toEqual(a.organization);
  });

  if (engine.name === 'postgres') {
    test('another process on the same database sees each change at once (no cache here: the caches above are tested with the API)', async () => {
      const other = await opened.another();
      try {
        const a = await m().createAccount({ email: 'ada@example.com', organizationName: 'One' });
        expect(await other.stores.management.findProjectByToken(a.project.apiToken)).toEqual(a.project);
        await other.stores.management.revokePersonalApiKey(a.personalApiKey.id);
        expect(await m().authenticateKey(a.personalApiKey.value)).toBeNull();
        // Ids come from the database: the two processes never hand out the same one.
        const [p1, p2] = await Promise.all([m().createProject(a.organization.id, 'p1', {}), other.stores.management.createProject(a.organization.id, 'p2', {})]);
        expect(p1.id).not.toBe(p2.id);
        const updated = await eventually(() => other.stores.management.listAllProjects(), (all) => all.length === 3);
        expect(updated.map((p) => p.name).sort()).toEqual(['Default project', 'p1', 'p2']);
      } finally {
        await other.close();
      }
    });
  }
});
