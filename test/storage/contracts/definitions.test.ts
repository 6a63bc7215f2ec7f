import { afterEach, beforeEach, expect, test } from 'bun:test';
import type { PropertyType } from '../../../src/core/ingest/property-type';
import { createSeenTracker, type SeenSummary } from '../../../src/storage/seen/seen-tracker';
import { createProjects, forEachEngine, type Opened } from './engines';

const DAY = 86_400_000;
const T0 = Date.parse('2024-05-01T10:00:00Z');

const summary = (events: Array<[string, number]>, properties: Array<[string, PropertyType | null]> = [], pairs: Array<[string, string[]]> = [], person: Array<[string, PropertyType | null]> = []): SeenSummary => ({
  events,
  properties: { names: properties.map(([n]) => n), types: properties.map(([, t]) => t) },
  personProperties: { names: person.map(([n]) => n), types: person.map(([, t]) => t) },
  eventProperties: pairs,
});

/** DefinitionsStore (event and property definitions, event_properties, query usage) as ingestion's seen tracker writes them. */
forEachEngine('definitions store', (engine) => {
  let opened: Opened;
  beforeEach(async () => {
    opened = await engine.open();
    await createProjects(opened.stores, 2);
  });
  afterEach(async () => {
    await opened.close();
  });
  const defs = () => opened.stores.definitions;
  const record = async (teamId: number, s: SeenSummary) => {
    const seen = createSeenTracker(opened.stores.seenRows, opened.stores.management);
    seen.recordSummary(teamId, s);
    await seen.flush();
  };
  const page = { limit: 100, offset: 0 };

  test('what ingestion saw is listed: names, filters, last seen, the first type of each property', async () => {
    await record(1, summary([['signup', T0], ['$pageview', T0 + 5]], [['plan', 'String'], ['price', 'Numeric'], ['$browser', 'String']], [['signup', ['plan', 'price']], ['$pageview', ['$browser']]], [['email', 'String']]));
    await record(1, summary([['signup', T0 + 2 * DAY], ['$pageview', T0 - DAY]], [['price', 'String'], ['Zeta', null]]));
    await record(2, summary([['other-project', T0]], [['secret', 'String']]));

    const listed = await defs().listEventDefinitions(1, page);
    expect(listed.count).toBe(2);
    expect(listed.results.map((d) => [d.name, d.lastSeenAt?.toISOString()])).toEqual([
      ['signup', new Date(T0 + 2 * DAY).toISOString()],
      ['$pageview', new Date(T0 + 5).toISOString()],
    ]);
    expect((await defs().listEventDefinitions(1, { ...page, eventType: 'event_custom' })).results.map((d) => d.name)).toEqual(['signup']);
    expect((await defs().listEventDefinitions(1, { ...page, search: 'PAGE view' })).results.map((d) => d.name)).toEqual(['$pageview']);
    expect((await defs().listEventDefinitions(1, { ...page, ordering: [{ field: 'name', descending: false }] })).results.map((d) => d.name)).toEqual(['$pageview', 'signup']);
    expect(await defs().eventNames(1)).toEqual(['$pageview', 'signup']);
    expect(await defs().eventNames(2)).toEqual(['other-project']);

    const properties = await defs().listPropertyDefinitions(1, { ...page, kind: 'event' });
    // Names in byte order, as DuckDB sorts them: '$' < 'Z' < 'p'.
    expect(properties.results.map((p) => [p.name, p.propertyType, p.isNumerical, p.seenOnEvents])).toEqual([
      ['$browser', 'String', false, null],
      ['Zeta', null, false, null],
      ['plan', 'String', false, null],
      ['price', 'Numeric', true, null],
    ]);
    const onSignup = await defs().listPropertyDefinitions(1, { ...page, kind: 'event', eventNames: ['signup'] });
    expect(onSignup.results.map((p) => [p.name, p.seenOnEvents])).toEqual([['plan', true], ['price', true], ['$browser', false], ['Zeta', false]]);
    expect((await defs().listPropertyDefinitions(1, { ...page, kind: 'event', eventNames: ['signup'], onlySeenOnEvents: true })).count).toBe(2);
    expect((await defs().listPropertyDefinitions(1, { ...page, kind: 'event', numericalOnly: true })).results.map((p) => p.name)).toEqual(['price']);
    expect((await defs().listPropertyDefinitions(1, { ...page, kind: 'event', excludeDollarNames: true, excludedNames: ['plan'] })).results.map((p) => p.name)).toEqual(['Zeta', 'price']);
    expect((await defs().listPropertyDefinitions(1, { ...page, kind: 'person' })).results.map((p) => p.name)).toEqual(['email']);
    expect(await defs().propertyNames(1, 'event')).toEqual([
      { name: '$browser', isNumerical: false },
      { name: 'Zeta', isNumerical: false },
      { name: 'plan', isNumerical: false },
      { name: 'price', isNumerical: true },
    ]);
    expect((await defs().listPropertyDefinitions(2, { ...page, kind: 'event' })).results.map((p) => p.name)).toEqual(['secret']);
  });

  test('flushes asked for while another is under way: none returns before what was recorded since is written', async () => {
    const seen = createSeenTracker(opened.stores.seenRows, opened.stores.management);
    seen.recordSummary(1, summary([['first', T0]]));
    const under = seen.flush();
    seen.recordSummary(2, summary([['second', T0]], [['plan', 'String']]));
    // Two callers wait (a timer's flush and shutdown's, say): the first to go on takes what is
    // pending, and the second, awaited here, must still wait for it to be written.
    const first = seen.flush();
    await seen.flush();
    expect(seen.pendingChanges()).toBe(0);
    expect(await defs().eventNames(2)).toEqual(['second']);
    expect((await defs().listPropertyDefinitions(2, { ...page, kind: 'event' })).results.map((p) => p.name)).toEqual(['plan']);
    await Promise.all([under, first]);
  });

  test('annotations: verification, tags, descriptions, types; unknown, malformed and other projects’ ids are null', async () => {
    await record(1, summary([['signup', T0]], [['plan', null]]));
    await record(2, summary([['signup', T0]]));
    const [event] = (await defs().listEventDefinitions(1, page)).results;
    const now = new Date(T0 + DAY);
    const verified = await defs().updateEventDefinition(1, event.id, { verified: true, tags: ['b', 'a'], description: 'Signed up', owner: 3 }, 9, now);
    expect(verified).toMatchObject({ verified: true, verifiedAt: now, verifiedBy: 9, tags: ['b', 'a'], description: 'Signed up', owner: 3, updatedBy: 9, updatedAt: now });
    const unverified = await defs().updateEventDefinition(1, event.id, { verified: false }, 9, now);
    expect(unverified).toMatchObject({ verified: false, verifiedAt: null, verifiedBy: null, tags: ['b', 'a'] });
    expect(await defs().getEventDefinition(1, event.id)).toEqual(unverified!);
    expect(await defs().getEventDefinition(2, event.id)).toBeNull();
    expect(await defs().getEventDefinition(1, 'nope')).toBeNull();
    expect(await defs().updateEventDefinition(2, event.id, { description: 'x' }, 9, now)).toBeNull();

    const [property] = (await defs().listPropertyDefinitions(1, { ...page, kind: 'event' })).results;
    const typed = await defs().updatePropertyDefinition(1, property.id, { propertyType: 'Numeric', tags: ['t'], description: 'Plan' }, 9, now);
    expect(typed).toMatchObject({ name: 'plan', propertyType: 'Numeric', isNumerical: true, tags: ['t'], description: 'Plan', updatedBy: 9, updatedAt: now });
    expect(await defs().getPropertyDefinition(1, property.id)).toEqual(typed!);
    expect(await defs().getPropertyDefinition(2, property.id)).toBeNull();
    expect(await defs().getPropertyDefinition(1, '123')).toBeNull();
    expect(await defs().updatePropertyDefinition(1, '123', { description: 'x' }, 9, now)).toBeNull();
  });

  test('query usage per day; deleting a project removes its definitions only; a restart reads them back', async () => {
    await record(1, summary([['signup', T0]], [['plan', 'String']], [['signup', ['plan']]]));
    await record(2, summary([['signup', T0]], [['plan', 'String']], [['signup', ['plan']]]));
    await defs().recordEventQueryUsage(1, ['signup', 'signup', 'other'], new Date(T0));
    await defs().recordEventQueryUsage(1, ['signup'], new Date(T0 + DAY));
    await defs().recordEventQueryUsage(1, ['signup'], new Date(T0 - 40 * DAY));
    await defs().recordEventQueryUsage(2, ['signup'], new Date(T0));
    expect(await defs().eventQueryUsage(1, ['signup', 'other', 'none'], new Date(T0 - 30 * DAY))).toEqual(new Map([['signup', 2], ['other', 1]]));
    expect(await defs().eventQueryUsage(1, [], new Date(T0))).toEqual(new Map());
    await defs().deleteTeam(2);
    expect((await defs().listEventDefinitions(2, page)).count).toBe(0);
    expect(await defs().eventQueryUsage(2, ['signup'], new Date(0))).toEqual(new Map());
    opened = await opened.reopen();
    expect(await defs().eventNames(1)).toEqual(['signup']);
    expect((await defs().listPropertyDefinitions(1, { ...page, kind: 'event', eventNames: ['signup'], onlySeenOnEvents: true })).results.map((p) => p.name)).toEqual(['plan']);
    expect(await defs().eventQueryUsage(1, ['signup'], new Date(T0 - 30 * DAY))).toEqual(new Map([['signup', 2]]));
    // Another tracker after the restart starts from what is stored: a repeat adds nothing.
    await record(1, summary([['signup', T0 - DAY]], [['plan', 'Numeric']], [['signup', ['plan']]]));
    expect((await defs().listEventDefinitions(1, page)).results.map((d) => [d.name, d.lastSeenAt?.getTime()])).toEqual([['signup', T0]]);
    expect((await defs().listPropertyDefinitions(1, { ...page, kind: 'event' })).results.map((p) => p.propertyType)).toEqual(['String']);
  });
});
