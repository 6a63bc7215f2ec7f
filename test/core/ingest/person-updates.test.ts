import { describe, expect, test } from 'bun:test';
import { applyPersonOperations, emptyPersonState, lookupIn, type PersonState } from '../../../src/core/ingest/person-state';
import { isIllegalDistinctId, planPersonUpdates, type PersonEvent, type PersonPlan } from '../../../src/core/ingest/person-updates';
import { personEvent } from '../../helpers/person-event';

const T0 = Date.parse('2024-06-01T00:00:00Z');
const T1 = Date.parse('2024-06-02T00:00:00Z');

const event = (overrides: Partial<PersonEvent>): PersonEvent => personEvent({ uuid: 'event-uuid', timestamp: T1, ...overrides });

const identify = (anon: string, overrides: Partial<PersonEvent> = {}) => event({ event: '$identify', anonDistinctId: anon, properties: { $anon_distinct_id: anon }, ...overrides });

function ids(): () => string {
  let n = 0;
  return () => `person-${++n}`;
}

/** State with persons given as [personId, distinctIds, properties, isIdentified, createdAt]. */
function stateWith(...persons: Array<[string, string[], Record<string, unknown>, boolean, number]>): PersonState {
  return applyPersonOperations(
    emptyPersonState(),
    persons.map(([personId, distinctIds, properties, isIdentified, createdAt]) => ({ type: 'create_person' as const, personId, distinctIds, properties, isIdentified, createdAt })),
  );
}

const plan = (e: PersonEvent, state: PersonState = emptyPersonState()): PersonPlan => planPersonUpdates(e, lookupIn(state), ids());

describe('planPersonUpdates: plain events', () => {
  test('an unknown distinct_id gets a person with $set_once, $set and the creating event', () => {
    expect(plan(event({ set: { email: 'a@x', plan: 'pro' }, setOnce: { plan: 'free', first: 'yes' }, unset: ['gone'] }))).toEqual({
      personId: 'person-1',
      operations: [{ type: 'create_person', personId: 'person-1', distinctIds: ['user'], properties: { plan: 'pro', first: 'yes', email: 'a@x', $creator_event_uuid: 'event-uuid' }, isIdentified: false, createdAt: T1 }],
      warnings: [],
    });
  });

  test('$set overwrites, $set_once fills only absent keys (a null counts as present), $unset removes', () => {
    const state = stateWith(['p', ['user'], { a: 1, b: null, c: 3, keep: true }, false, T0]);
    expect(plan(event({ set: { a: 10 }, setOnce: { a: 99, b: 99, d: 4 }, unset: ['c', 'missing'] }), state)).toEqual({
      personId: 'p',
      operations: [{ type: 'update_person', personId: 'p', properties: { a: 10, b: null, keep: true, d: 4 }, isIdentified: false }],
      warnings: [],
    });
  });

  test('client keys like __proto__ and constructor stay plain properties', () => {
    const set = JSON.parse('{"__proto__": {"polluted": true}, "constructor": 1}') as Record<string, unknown>;
    const state = stateWith(['p', ['user'], {}, false, T0]);
    const result = plan(event({ set, setOnce: { toString: 'x' }, unset: ['hasOwnProperty'] }), state);
    const expected: Record<string, unknown> = { constructor: 1, toString: 'x' };
    Object.defineProperty(expected, '__proto__', { value: { polluted: true }, enumerable: true, writable: true, configurable: true });
    expect(result.operations).toEqual([{ type: 'update_person', personId: 'p', properties: expected, isIdentified: false }]);
    expect(Object.keys((result.operations[0] as { properties: object }).properties).sort()).toEqual(['__proto__', 'constructor', 'toString']);
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    expect(lookupIn(emptyPersonState()).lookup('__proto__')).toBeNull();
    expect(lookupIn(emptyPersonState()).lookup('constructor')).toBeNull();
  });

  test('nothing changes: no operation', () => {
    const state = stateWith(['p', ['user'], { a: 1 }, true, T0]);
    expect(plan(event({ set: { a: 1 }, setOnce: { a: 2 }, unset: ['b'] }), state)).toEqual({ personId: 'p', operations: [], warnings: [] });
  });

  test("new values of the page and browser keys a person has change nothing alone (PostHog's filtered person properties); with another change every change is written", () => {
    const had = { $current_url: 'https://a.test/1', $browser: 'Chrome', $geoip_latitude: 1, $geoip_city_name: 'Berlin', plan: 'free' };
    const state = stateWith(['p', ['user'], had, false, T0]);
    const quietOnly = { $current_url: 'https://a.test/2', $browser: 'Firefox', $geoip_latitude: 2 };
    expect(plan(event({ event: '$pageview', set: quietOnly }), state)).toEqual({ personId: 'p', operations: [], warnings: [] });
    const update = (properties: Record<string, unknown>): PersonPlan => ({ personId: 'p', operations: [{ type: 'update_person', personId: 'p', properties, isIdentified: false }], warnings: [] });
    // Another change: a key not quiet, a quiet key the person lacks, a $set_once filling a gap, an $unset.
    expect(plan(event({ event: '$pageview', set: { ...quietOnly, plan: 'pro' } }), state)).toEqual(update({ ...had, ...quietOnly, plan: 'pro' }));
    expect(plan(event({ event: '$pageview', set: { ...quietOnly, $os: 'Linux' } }), state)).toEqual(update({ ...had, ...quietOnly, $os: 'Linux' }));
    expect(plan(event({ event: '$pageview', set: { ...quietOnly, $geoip_city_name: 'Paris' } }), state)).toEqual(update({ ...had, ...quietOnly, $geoip_city_name: 'Paris' }));
    expect(plan(event({ event: '$pageview', set: quietOnly, setOnce: { $initial_browser: 'Chrome' } }), state)).toEqual(update({ ...had, ...quietOnly, $initial_browser: 'Chrome' }));
    const { plan: _gone, ...kept } = had;
    expect(plan(event({ event: '$pageview', set: quietOnly, unset: ['plan'] }), state)).toEqual(update({ ...kept, ...quietOnly }));
    // The person events write them whatever else they carry.
    expect(plan(event({ event: '$set', set: quietOnly }), state)).toEqual(update({ ...had, ...quietOnly }));
    expect(plan(event({ event: '$identify', set: quietOnly }), stateWith(['p', ['user'], had, true, T0]))).toEqual({
      personId: 'p', operations: [{ type: 'update_person', personId: 'p', properties: { ...had, ...quietOnly }, isIdentified: true }], warnings: [],
    });
  });

  test('$process_person_profile: false changes no person', () => {
    const state = stateWith(['p', ['user'], {}, false, T0]);
    expect(plan(event({ processPerson: false, set: { a: 1 } }), state)).toEqual({ personId: 'p', operations: [], warnings: [] });
    expect(plan(event({ processPerson: false, distinctId: 'anon' }), state)).toEqual({ personId: null, operations: [], warnings: [] });
  });

  test('$groupidentify upserts the group; its distinct_id ($company_acme) gets a person as in PostHog', () => {
    const groupEvent = event({ event: '$groupidentify', distinctId: '$company_acme', properties: { $group_type: 'company', $group_key: 42, $group_set: { name: 'Acme' } } });
    expect(plan(groupEvent)).toEqual({
      personId: 'person-1',
      operations: [
        { type: 'upsert_group', groupType: 'company', groupKey: '42', properties: { name: 'Acme' }, createdAt: T1 },
        { type: 'create_person', personId: 'person-1', distinctIds: ['$company_acme'], properties: { $creator_event_uuid: 'event-uuid' }, isIdentified: false, createdAt: T1 },
      ],
      warnings: [],
    });
  });

  test('$groupidentify without a type or key upserts nothing', () => {
    const state = stateWith(['p', ['user'], {}, false, T0]);
    expect(plan(event({ event: '$groupidentify', properties: { $group_type: 'company' } }), state).operations).toEqual([]);
  });

  test("a project's groups of a sixth type are not recorded (PostHog's five group types); more groups of its first five are", () => {
    const upsert = (groupType: string, groupKey: string) => ({ type: 'upsert_group' as const, groupType, groupKey, properties: { groupKey }, createdAt: T1 });
    const state = applyPersonOperations(emptyPersonState(), [...['a', 'b', 'c', 'd', 'e', 'f'].map((type) => upsert(type, 'k')), upsert('e', 'k2')]);
    expect(state.groups).toEqual({ a: { k: { groupKey: 'k' } }, b: { k: { groupKey: 'k' } }, c: { k: { groupKey: 'k' } }, d: { k: { groupKey: 'k' } }, e: { k: { groupKey: 'k' }, k2: { groupKey: 'k2' } } });
  });
});

describe('planPersonUpdates: $identify and $create_alias', () => {
  test('neither id has a person: one identified person with both ids', () => {
    expect(plan(identify('anon', { set: { email: 'a@x' } }))).toEqual({
      personId: 'person-1',
      operations: [{ type: 'create_person', personId: 'person-1', distinctIds: ['user', 'anon'], properties: { email: 'a@x', $creator_event_uuid: 'event-uuid' }, isIdentified: true, createdAt: T1 }],
      warnings: [],
    });
  });

  test('only the anonymous id has a person: the user id joins it, which becomes identified', () => {
    const state = stateWith(['anon-person', ['anon'], { seen: 1 }, false, T0]);
    expect(plan(identify('anon', { set: { email: 'a@x' } }), state)).toEqual({
      personId: 'anon-person',
      operations: [
        { type: 'add_distinct_id', personId: 'anon-person', distinctId: 'user' },
        { type: 'update_person', personId: 'anon-person', properties: { seen: 1, email: 'a@x' }, isIdentified: true },
      ],
      warnings: [],
    });
  });

  test('only the user id has a person: the anonymous id joins it', () => {
    const state = stateWith(['user-person', ['user'], { email: 'a@x' }, true, T0]);
    expect(plan(identify('anon'), state)).toEqual({
      personId: 'user-person',
      operations: [{ type: 'add_distinct_id', personId: 'user-person', distinctId: 'anon' }],
      warnings: [],
    });
  });

  test('both have persons: the anonymous one is merged into the user one, whose properties win', () => {
    const state = stateWith(['anon-person', ['anon', 'anon-2'], { a: 'anon', only_anon: 1 }, false, T0], ['user-person', ['user'], { a: 'user', only_user: 2 }, false, T1]);
    expect(plan(identify('anon', { set: { s: 1 }, setOnce: { only_anon: 9, o: 2 } }), state)).toEqual({
      personId: 'user-person',
      operations: [
        { type: 'merge_persons', fromPersonId: 'anon-person', intoPersonId: 'user-person', properties: { a: 'user', only_anon: 1, only_user: 2, o: 2, s: 1 }, isIdentified: true, createdAt: T0 },
      ],
      warnings: [],
    });
  });

  test('an already identified person is not merged away; the target still becomes identified', () => {
    const state = stateWith(['other', ['anon'], {}, true, T0], ['target', ['user'], {}, false, T1]);
    expect(plan(identify('anon'), state)).toEqual({
      personId: 'target',
      operations: [{ type: 'update_person', personId: 'target', properties: {}, isIdentified: true }],
      warnings: [{ type: 'cannot_merge_already_identified', details: { sourcePersonDistinctId: 'anon', targetPersonDistinctId: 'user', eventUuid: 'event-uuid' } }],
    });
  });

  test('$merge_dangerously merges even an identified person', () => {
    const state = stateWith(['other', ['old'], { x: 1 }, true, T0], ['target', ['user'], {}, true, T1]);
    expect(plan(event({ event: '$merge_dangerously', alias: 'old' }), state).operations).toEqual([
      { type: 'merge_persons', fromPersonId: 'other', intoPersonId: 'target', properties: { x: 1 }, isIdentified: true, createdAt: T0 },
    ]);
  });

  test('both ids already on one person: only the identified flag', () => {
    const state = stateWith(['p', ['user', 'anon'], {}, false, T0]);
    expect(plan(identify('anon'), state)).toEqual({ personId: 'p', operations: [{ type: 'update_person', personId: 'p', properties: {}, isIdentified: true }], warnings: [] });
  });

  test('$identify of the same id is a plain update (posthog-node identify)', () => {
    const state = stateWith(['p', ['user'], {}, false, T0]);
    expect(plan(identify('user', { set: { a: 1 } }), state)).toEqual({ personId: 'p', operations: [{ type: 'update_person', personId: 'p', properties: { a: 1 }, isIdentified: false }], warnings: [] });
  });

  test('$create_alias merges the alias into the event distinct_id', () => {
    const state = stateWith(['alias-person', ['old-id'], { from: 'alias' }, false, T0], ['p', ['user'], {}, true, T1]);
    expect(plan(event({ event: '$create_alias', alias: 'old-id', properties: { alias: 'old-id' } }), state).operations).toEqual([
      { type: 'merge_persons', fromPersonId: 'alias-person', intoPersonId: 'p', properties: { from: 'alias' }, isIdentified: true, createdAt: T0 },
    ]);
  });

  test.each([
    'anonymous', 'ANONYMOUS', 'Guest', 'distinctid', 'distinct_id', 'id', 'not_authenticated', 'email', 'undefined', 'true', 'False',
    '[object Object]', 'NaN', 'None', 'none', 'null', '0', '"anonymous"', "'null'", '', '   ',
  ])('the placeholder id %p is never merged', (placeholder) => {
    const state = stateWith(['p', ['user'], {}, false, T0], ['q', [placeholder], {}, false, T0]);
    expect(plan(identify(placeholder, { set: { a: 1 } }), state)).toEqual({
      personId: 'p',
      operations: [{ type: 'update_person', personId: 'p', properties: { a: 1 }, isIdentified: false }],
      warnings: [{ type: 'cannot_merge_with_illegal_distinct_id', details: { illegalDistinctId: placeholder, otherDistinctId: 'user', eventUuid: 'event-uuid' } }],
    });
  });

  test('a placeholder as the event distinct_id refuses the merge too', () => {
    expect(plan(event({ event: '$create_alias', distinctId: 'undefined', alias: 'real' })).warnings).toEqual([
      { type: 'cannot_merge_with_illegal_distinct_id', details: { illegalDistinctId: 'undefined', otherDistinctId: 'real', eventUuid: 'event-uuid' } },
    ]);
  });

  test.each(['nan', 'NULL', '00', 'user-0', 'anonymous-1'])('%p is a legal id', (id) => {
    expect(isIllegalDistinctId(id)).toEqual(false);
  });
});

describe('applyPersonOperations: a browser session end to end', () => {
  test('anonymous visit, identify, alias, a second device merged in, a group', () => {
    const nextId = ids();
    const steps: PersonEvent[] = [
      event({ distinctId: 'anon', processPerson: false, set: {} }),
      identify('anon', { set: { email: 'a@x' }, setOnce: { first: 'web' }, timestamp: T0 }),
      event({ distinctId: 'device-2', set: { device: 'phone' }, setOnce: { first: 'phone' } }),
      identify('device-2', { set: { plan: 'pro' } }),
      event({ event: '$create_alias', alias: 'crm-42' }),
      event({ event: '$groupidentify', properties: { $group_type: 'company', $group_key: 'acme', $group_set: { name: 'Acme' } } }),
      event({ event: '$groupidentify', properties: { $group_type: 'company', $group_key: 'acme', $group_set: { size: 5 } } }),
      event({ unset: ['device'] }),
    ];
    let state = emptyPersonState();
    const personIds: Array<string | null> = [];
    for (const step of steps) {
      const result = planPersonUpdates(step, lookupIn(state), nextId);
      personIds.push(result.personId);
      state = applyPersonOperations(state, result.operations);
    }
    expect(personIds).toEqual([null, 'person-1', 'person-2', 'person-1', 'person-1', 'person-1', 'person-1', 'person-1']);
    expect(state).toEqual({
      persons: {
        'person-1': {
          personId: 'person-1',
          distinctIds: ['user', 'anon', 'device-2', 'crm-42'],
          properties: { first: 'web', email: 'a@x', $creator_event_uuid: 'event-uuid', plan: 'pro' },
          isIdentified: true,
          createdAt: T0,
        },
      },
      distinctIds: { user: 'person-1', anon: 'person-1', 'device-2': 'person-1', 'crm-42': 'person-1' },
      groups: { company: { acme: { name: 'Acme', size: 5 } } },
    });
  });
});
