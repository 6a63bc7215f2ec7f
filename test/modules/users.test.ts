import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { NOT_AUTHENTICATED, createOtherAccount, createTestApp, type TestApp } from '../helpers/test-app';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

describe('current user', () => {
  test('GET /api/users/@me/ shows the user, organization, project with key, and what was seen', async () => {
    const { user, organization, project } = t.account;
    const res = await t.json('GET', '/api/users/@me/');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: user.id,
      uuid: user.uuid,
      distinct_id: user.distinctId,
      first_name: '',
      last_name: '',
      email: user.email,
      date_joined: user.createdAt.toISOString(),
      pending_email: null,
      is_email_verified: true,
      has_password: false,
      is_staff: false,
      is_impersonated: false,
      anonymize_data: false,
      toolbar_mode: 'toolbar',
      notification_settings: {},
      team: {
        id: project.id,
        uuid: project.uuid,
        organization: organization.id,
        api_token: project.apiToken,
        app_urls: [],
        name: 'Default project',
        completed_snippet_onboarding: false,
        ingested_event: false,
        is_demo: false,
        timezone: 'UTC',
        access_control: false,
        effective_membership_level: 15,
        event_names: [],
        event_properties: [],
        event_properties_numerical: [],
        person_properties: [],
      },
      organization: {
        id: organization.id,
        name: organization.name,
        slug: organization.slug,
        created_at: organization.createdAt.toISOString(),
        updated_at: organization.updatedAt.toISOString(),
        membership_level: 15,
        teams: [{ id: project.id, name: 'Default project', api_token: project.apiToken }],
      },
      organizations: [{ id: organization.id, name: organization.name, slug: organization.slug, logo_media_id: null, membership_level: 15 }],
      posthog_version: 'test',
    });
  });

  test('the deprecated /api/user/ has the legacy shape and a Deprecation header', async () => {
    const res = await t.json('GET', '/api/user/');
    expect(res.status).toBe(200);
    expect(res.headers.get('deprecation')).toBe('Mon, 05 Apr 2021 00:00:00 GMT');
    expect(res.body).toMatchObject({
      id: t.account.user.id,
      email: t.account.user.email,
      team: { id: t.account.project.id, api_token: t.account.project.apiToken, event_names: [], ingested_event: false },
      organizations: [{ id: t.account.organization.id, name: t.account.organization.name }],
      posthog_version: 'test',
    });
  });

  test.each(['/api/users/@me/', '/api/user/'])('%s without a key is a 401', async (path) => {
    const res = await t.json('GET', path, { key: null });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(NOT_AUTHENTICATED);
  });

  test('another organization sees only its own user and project', async () => {
    const other = await createOtherAccount(t, 'users-other@example.com');
    const res = await t.json('GET', '/api/users/@me/', { key: other.personalApiKey.value });
    expect(res.body.email).toBe('users-other@example.com');
    expect(res.body.team.id).toBe(other.project.id);
    expect(JSON.stringify(res.body)).not.toContain(t.account.project.apiToken);
    expect(JSON.stringify(res.body)).not.toContain(t.account.organization.id);
  });
});
