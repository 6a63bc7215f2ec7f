import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { rm } from 'node:fs/promises';
import { PostHog as PostHog3 } from 'posthog-node-3';
import { PostHog as PostHog4 } from 'posthog-node-4';
import { PostHog as PostHog5 } from 'posthog-node-5';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, TEST_KEYS } from '../helpers/server-process';
import { PROJECT_ID, listEvents, names, personsWhere, startE2eServer, theEvent, waitForEvents, type E2eServer } from './api';

/**
 * Real posthog-node clients send events to the real server, and everything is read back through
 * `/api/projects/1/events/`:
 * - 5.70.0: `POST /batch/` with `Content-Encoding: gzip`, no `type`/`library` fields;
 * - 4.18.0: `POST /batch/` plain JSON with `type`, `library`, `library_version`;
 * - 3.6.3: `POST /batch/` plain JSON, `identify()` drops `$set_once`, callback-style flush/shutdown.
 * Calls: capture (properties, groups), identify ($set, $set_once), alias, groupIdentify, flush,
 * shutdown (which must send what is still queued). Flags are covered by flags-node.test.ts.
 */

/** The installed version of an aliased package (their `exports` do not offer package.json). */
const installedVersion = (name: string): string => JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')).version;

let server: E2eServer;

beforeAll(async () => {
  server = await startE2eServer();
}, 30_000);

afterAll(async () => {
  await server?.stop();
  if (server) await rm(server.dataDir, { recursive: true, force: true });
});

/** The calls every version offers, in each version's own spelling. */
interface Client {
  capture(message: { distinctId: string; event: string; properties?: Record<string, unknown>; groups?: Record<string, string> }): void;
  identify(message: { distinctId: string; properties?: Record<string, unknown> }): void;
  alias(message: { distinctId: string; alias: string }): void;
  groupIdentify(message: { groupType: string; groupKey: string; properties?: Record<string, unknown> }): void;
  on(event: 'error', listener: (error: unknown) => void): unknown;
}

interface Version {
  major: 3 | 4 | 5;
  version: string;
  make(options: Record<string, unknown>): Client;
  flush(client: Client): Promise<unknown>;
  shutdown(client: Client): Promise<unknown>;
  /** 3.x sends only `$set` from identify. */
  keepsSetOnce: boolean;
}

const VERSIONS: Version[] = [
  {
    major: 5,
    version: installedVersion('posthog-node-5'),
    make: (options) => new PostHog5(TEST_KEYS.project, options) as unknown as Client,
    flush: (client) => (client as unknown as PostHog5).flush(),
    shutdown: (client) => (client as unknown as PostHog5).shutdown(),
    keepsSetOnce: true,
  },
  {
    major: 4,
    version: installedVersion('posthog-node-4'),
    make: (options) => new PostHog4(TEST_KEYS.project, options) as unknown as Client,
    flush: (client) => (client as unknown as PostHog4).flush(),
    shutdown: (client) => (client as unknown as PostHog4).shutdown(),
    keepsSetOnce: true,
  },
  {
    major: 3,
    version: installedVersion('posthog-node-3'),
    make: (options) => new PostHog3(TEST_KEYS.project, options) as unknown as Client,
    flush: (client) => (client as unknown as PostHog3).flushAsync(),
    shutdown: (client) => (client as unknown as PostHog3).shutdownAsync(),
    keepsSetOnce: false,
  },
];

test('the installed clients are the versions this suite covers', () => {
  expect(VERSIONS.map((v) => v.version)).toEqual(['5.70.0', '4.18.0', '3.6.3']);
});

describe.each(VERSIONS)('posthog-node $version', ({ major, version, make, flush, shutdown, keepsSetOnce }) => {
  const anon = `node${major}-anonymous`;
  const user = `node${major}-user`;
  const email = `node${major}@example.com`;
  const company = `acme-node${major}`;

  test('capture, identify, alias and groupIdentify are stored as PostHog stores them', async () => {
    try {
      await run();
    } catch (error) {
      console.error(server.diagnostics());
      throw error;
    }
  }, 60_000);

  async function run() {
    // A large batch and a long interval: only the explicit flush and shutdown() send anything.
    const client = make({ host: server.url, flushAt: 100, flushInterval: 600_000, fetchRetryCount: 0, requestTimeout: 10_000 });
    const errors: unknown[] = [];
    client.on('error', (error) => errors.push(error));

    client.capture({
      distinctId: anon,
      event: 'e2e signed up',
      properties: { plan: 'pro', seats: 3, price: 9.5, trial: false, nested: { a: [1, 2], b: { c: 'd' } }, tags: ['x', 'y'] },
      groups: { company },
    });
    client.identify({
      distinctId: user,
      properties: { $set: { email, name: `Node ${major}` }, $set_once: { first_plan: 'pro' } },
    });
    await flush(client);

    // Still queued when shutdown() is called: shutdown must send them.
    client.alias({ distinctId: user, alias: anon });
    client.groupIdentify({ groupType: 'company', groupKey: company, properties: { name: 'Acme', employees: 42 } });
    client.capture({ distinctId: anon, event: 'e2e after alias', properties: { step: 2 }, groups: { company } });
    client.capture({ distinctId: user, event: 'e2e as user', properties: { step: 3 } });
    await shutdown(client);
    expect(errors).toEqual([]);

    // Everything arrived, under the distinct ids the client used.
    const anonEvents = await waitForEvents(server, { distinct_id: anon }, (e) => e.length >= 2);
    expect(names(anonEvents)).toEqual(['e2e after alias', 'e2e signed up']);
    const userEvents = await waitForEvents(server, { distinct_id: user }, (e) => e.length >= 3);
    expect(names(userEvents)).toEqual(['$create_alias', '$identify', 'e2e as user']);

    // capture: custom properties as sent (JSON types kept), the library's own, and $groups.
    const signedUp = await theEvent(server, 'e2e signed up', anon);
    expect(signedUp.distinct_id).toBe(anon);
    expect(signedUp.properties).toMatchObject({
      plan: 'pro',
      seats: 3,
      price: 9.5,
      trial: false,
      nested: { a: [1, 2], b: { c: 'd' } },
      tags: ['x', 'y'],
      $lib: 'posthog-node',
      $lib_version: version,
      $groups: { company },
    });
    expect(signedUp.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(Date.now() - Date.parse(signedUp.timestamp)).toBeLessThan(120_000);
    expect(signedUp.elements_chain).toBe('');

    // identify: $set always; $set_once only where the client sends it (3.x drops it).
    const identify = await theEvent(server, '$identify', user);
    expect(identify.properties.$set).toEqual({ email, name: `Node ${major}` });
    if (keepsSetOnce) expect(identify.properties.$set_once).toEqual({ first_plan: 'pro' });
    else expect(identify.properties.$set_once ?? {}).toEqual({});

    // alias: the new id goes to properties.alias, the event belongs to the identified user.
    const alias = await theEvent(server, '$create_alias', user);
    expect(alias.properties).toMatchObject({ alias: anon, distinct_id: user });

    // groupIdentify: a `$<type>_<key>` distinct id with the group's type, key and properties.
    const group = await theEvent(server, '$groupidentify', `$company_${company}`);
    expect(group.properties).toMatchObject({ $group_type: 'company', $group_key: company, $group_set: { name: 'Acme', employees: 42 } });

    const afterAlias = await theEvent(server, 'e2e after alias', anon);
    expect(afterAlias.properties).toMatchObject({ step: 2, $groups: { company } });

    // Person merge: identify + alias left one identified person behind both ids, with the $set
    // (and $set_once) properties; every event of either id shows that person.
    const personProperties = { email, name: `Node ${major}` };
    for (const event of [...anonEvents, ...userEvents]) {
      expect(event.person).not.toBeNull();
      expect(event.person!.is_identified).toBe(true);
      expect(event.person!.properties).toEqual(personProperties);
      expect(event.person!.distinct_ids).toHaveLength(1);
      expect([anon, user]).toContain(event.person!.distinct_ids[0]);
    }
    expect(new Set([...anonEvents, ...userEvents].map((e) => JSON.stringify(e.person))).size).toBe(1);

    const persons = await personsWhere(server, 'email', email);
    expect(persons).toHaveLength(1);
    const [person] = persons;
    expect([...person.distinct_ids].sort()).toEqual([anon, user]);
    expect(person.is_identified).toBe(true);
    expect(person.properties).toMatchObject(personProperties);
    if (keepsSetOnce) expect(person.properties.first_plan).toBe('pro');
    else expect(person.properties.first_plan).toBeUndefined();

    // The person's events, by person id, are the events of both distinct ids.
    const byPerson = await listEvents(server, { person_id: person.uuid });
    expect(names(byPerson)).toEqual(['$create_alias', '$identify', 'e2e after alias', 'e2e as user', 'e2e signed up']);
  }
});

test('the project key is what routes events: all three clients landed in project 1', async () => {
  const all = await listEvents(server, {});
  const libs = new Set(all.map((e) => e.properties.$lib_version));
  expect([...libs].sort()).toEqual(['3.6.3', '4.18.0', '5.70.0']);
  expect(PROJECT_ID).toBe(1);
}, 30_000);
