import { describe, expect, test } from 'bun:test';
import { normalizeEvent, type NormalizeContext, type NormalizedEvent } from '../../../src/core/ingest/normalize-event';
import type { RawEvent } from '../../../src/core/ingest/extract-events';
import { personEvent } from '../../helpers/person-event';

const NOW = '2024-06-01T12:00:00.000Z';
const GENERATED = '00000000-0000-4000-8000-00000000000a';
const ctx = (overrides: Partial<NormalizeContext> = {}): NormalizeContext => ({
  now: new Date(NOW),
  sentAt: null,
  ip: null,
  anonymizeIps: false,
  newUuid: () => GENERATED,
  ...overrides,
});

const normalized = (overrides: Partial<NormalizedEvent>): { ok: NormalizedEvent } => ({
  ok: { ...personEvent({ uuid: GENERATED, distinctId: 'u', timestamp: Date.parse(NOW) }), elementsChain: '', groups: {}, ...overrides },
});

const ok = (raw: RawEvent, context = ctx()): NormalizedEvent => {
  const result = normalizeEvent(raw, context);
  if (!('ok' in result)) throw new Error(`dropped: ${result.drop}`);
  return result.ok;
};

describe('normalizeEvent: event name', () => {
  test.each([
    ['a name', 'signed up', { event: 'signed up' }],
    ['whitespace is a name', ' ', { event: ' ' }],
    ['a number becomes its JSON text', 123, { event: '123' }],
    ['an object becomes its JSON text', { a: 1 }, { event: '{"a":1}' }],
    ['cut to 200 characters', 'e'.repeat(250), { event: 'e'.repeat(200) }],
    ['cut by characters, not through an emoji', `${'e'.repeat(199)}😀😀`, { event: `${'e'.repeat(199)}😀` }],
    ['NUL becomes U+FFFD', 'a\u0000b', { event: 'a\uFFFDb' }],
    ['empty: dropped (PostHog: 200, not stored)', '', { drop: 'missing_event_name' }],
    ['null: dropped', null, { drop: 'missing_event_name' }],
    ['missing: dropped (spec: no 400)', undefined, { drop: 'missing_event_name' }],
  ] as const)('%s', (_name, event, expected) => {
    const result = normalizeEvent({ event, distinct_id: 'u' }, ctx());
    expect('ok' in result ? { event: result.ok.event } : result).toEqual(expected);
  });
});

describe('normalizeEvent: distinct_id', () => {
  test.each([
    ['top-level distinct_id (posthog-node)', { distinct_id: 'node-user' }, { distinctId: 'node-user' }],
    ['properties.distinct_id (posthog-js)', { properties: { distinct_id: 'js-user' } }, { distinctId: 'js-user' }],
    ['$distinct_id first (/engage)', { $distinct_id: 'a', distinct_id: 'b', properties: { distinct_id: 'c' } }, { distinctId: 'a' }],
    ['properties.distinct_id before distinct_id', { distinct_id: 'b', properties: { distinct_id: 'c' } }, { distinctId: 'c' }],
    ['a null does not hide a good id elsewhere', { $distinct_id: null, distinct_id: 'b' }, { distinctId: 'b' }],
    ['a number becomes a string (PostHog: 2 → "2")', { distinct_id: 2 }, { distinctId: '2' }],
    ['zero is an id', { distinct_id: 0 }, { distinctId: '0' }],
    ['a float', { distinct_id: 1.5 }, { distinctId: '1.5' }],
    ['a boolean', { distinct_id: false }, { distinctId: 'false' }],
    ['an object becomes its JSON text', { distinct_id: { id: 1 } }, { distinctId: '{"id":1}' }],
    ['cut to 200 characters (PostHog test_long_distinct_id)', { distinct_id: 'a'.repeat(250) }, { distinctId: 'a'.repeat(200) }],
    ['NUL becomes U+FFFD', { distinct_id: 'a\u0000' }, { distinctId: 'a\uFFFD' }],
    ['missing: dropped', {}, { drop: 'missing_distinct_id' }],
    ['null: dropped', { distinct_id: null }, { drop: 'missing_distinct_id' }],
    ['empty: dropped', { distinct_id: '' }, { drop: 'missing_distinct_id' }],
    ['whitespace only: dropped', { distinct_id: '  \t' }, { drop: 'missing_distinct_id' }],
    ['properties not an object: dropped', { distinct_id: 'u', properties: 'nope' }, { drop: 'invalid_properties' }],
    ['properties an array: dropped', { distinct_id: 'u', properties: [1] }, { drop: 'invalid_properties' }],
  ] as const)('%s', (_name, fields, expected) => {
    const result = normalizeEvent({ event: 'e', ...fields } as RawEvent, ctx());
    expect('ok' in result ? { distinctId: result.ok.distinctId } : result).toEqual(expected);
  });
});

describe('normalizeEvent: uuid', () => {
  test.each([
    ['a valid client uuid is kept (PostHog test_custom_uuid)', '01823e89-f75d-0000-0d4d-3d43e54f6de5', '01823e89-f75d-0000-0d4d-3d43e54f6de5'],
    ['upper case is lowered', '01823E89-F75D-0000-0D4D-3D43E54F6DE5', '01823e89-f75d-0000-0d4d-3d43e54f6de5'],
    ['without hyphens', '01823e89f75d00000d4d3d43e54f6de5', '01823e89-f75d-0000-0d4d-3d43e54f6de5'],
    ['invalid: a new one', 'invalid_uuid', GENERATED],
    ['not a string: a new one', 12345, GENERATED],
    ['absent: a new one', undefined, GENERATED],
  ] as const)('%s', (_name, uuid, expected) => {
    expect(ok({ event: 'e', distinct_id: 'u', uuid }).uuid).toEqual(expected);
  });
});

describe('normalizeEvent: timestamp', () => {
  const iso = (ms: number) => new Date(ms).toISOString();
  test.each([
    ['absent: the receive time', '2023-01-01T12:00:00Z', {}, null, '2023-01-01T12:00:00.000Z'],
    ['skew corrected: now + (timestamp - sent_at) (timestamp.rs)', '2023-01-01T12:00:00Z', { timestamp: '2023-01-01T11:59:55Z' }, '2023-01-01T12:00:05Z', '2023-01-01T11:59:50.000Z'],
    ['skew corrected (plugin-server test)', '2021-10-29T01:44:00Z', { timestamp: '2021-10-30T03:02:00Z' }, '2021-10-30T03:12:00Z', '2021-10-29T01:34:00.000Z'],
    ['offset wins: now - offset (timestamp.rs)', '2023-01-01T12:00:00Z', { offset: 5000 }, null, '2023-01-01T11:59:55.000Z'],
    ['offset wins over timestamp and sent_at', '2023-01-01T12:00:00Z', { timestamp: '2020-01-01T00:00:00Z', offset: 1000 }, '2023-01-01T12:00:05Z', '2023-01-01T11:59:59.000Z'],
    ['a fractional offset is ignored (Rust reads integers only)', '2023-01-01T12:00:00Z', { offset: 1.5 }, null, '2023-01-01T12:00:00.000Z'],
    ['timestamp only: taken as is', '2023-01-01T12:00:00Z', { timestamp: '2022-12-31T10:00:00+02:00' }, null, '2022-12-31T08:00:00.000Z'],
    ['no zone means UTC', '2023-01-01T12:00:00Z', { timestamp: '2022-12-31 10:00:00.123456' }, null, '2022-12-31T10:00:00.123Z'],
    ['a number is epoch ms', '2023-01-01T12:00:00Z', { timestamp: 1672570800000 }, null, '2023-01-01T11:00:00.000Z'],
    ['$ignore_sent_at keeps the timestamp', '2023-01-01T12:00:00Z', { timestamp: '2023-01-01T11:00:00Z', properties: { $ignore_sent_at: true } }, '2023-01-01T12:00:05Z', '2023-01-01T11:00:00.000Z'],
    ['24 h in the future: clamped to now', '2023-01-01T12:00:00Z', { timestamp: '2023-01-02T12:00:00Z' }, null, '2023-01-01T12:00:00.000Z'],
    ['22 h in the future: kept', '2023-01-01T12:00:00Z', { timestamp: '2023-01-02T10:00:00Z' }, null, '2023-01-02T10:00:00.000Z'],
    ['a skew that lands > 23 h ahead: clamped', '2023-01-01T12:00:00Z', { timestamp: '2023-01-03T00:00:00Z' }, '2023-01-01T00:00:00Z', '2023-01-01T12:00:00.000Z'],
    ['year 1 is kept (timestamp.rs)', '2023-01-01T12:00:00Z', { timestamp: '0001-01-01T12:00:00Z' }, null, '0001-01-01T12:00:00.000Z'],
    ['a result before year 0 becomes the epoch', '2024-01-01T00:00:00Z', { timestamp: '0001-01-01T00:00:00Z' }, '3000-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z'],
    ['unparseable: the receive time (timestamp.rs)', '2023-01-01T12:00:00Z', { timestamp: '99999-01-01T12:00:00Z' }, null, '2023-01-01T12:00:00.000Z'],
    ['an impossible date: the receive time', '2023-01-01T12:00:00Z', { timestamp: '2023-02-30T00:00:00Z' }, null, '2023-01-01T12:00:00.000Z'],
  ] as const)('%s', (_name, now, fields, sentAt, expected) => {
    const context = ctx({ now: new Date(now), sentAt: sentAt === null ? null : new Date(sentAt) });
    expect(iso(ok({ event: 'e', distinct_id: 'u', ...fields } as RawEvent, context).timestamp)).toEqual(expected);
  });
});

describe('normalizeEvent: the spec sample forms keep everything they carry', () => {
  const context = { library: { name: 'analytics-python', version: '1.0' }, ip: '1.2.3.4' };
  test.each([
    [
      'alias',
      { type: 'alias', event: '$create_alias', messageId: 'm-1', context, properties: { distinct_id: 'new-id', alias: 'old-id' }, timestamp: '2024-06-01T11:00:00Z' },
      normalized({ event: '$create_alias', distinctId: 'new-id', alias: 'old-id', timestamp: Date.parse('2024-06-01T11:00:00Z'), properties: { distinct_id: 'new-id', alias: 'old-id', $type: 'alias', $message_id: 'm-1', $context: context } }),
    ],
    [
      'capture',
      { type: 'capture', event: '$event', distinct_id: 'u', messageId: 'm-2', context: 'ctx-string', properties: { plan: 'pro' } },
      normalized({ event: '$event', properties: { plan: 'pro', $type: 'capture', $message_id: 'm-2', $context: 'ctx-string' } }),
    ],
    [
      'identify',
      { type: 'identify', event: '$identify', distinct_id: 'u', messageId: 'm-3', $set: { email: 'u@example.com' }, properties: {} },
      normalized({ event: '$identify', set: { email: 'u@example.com' }, properties: { $type: 'identify', $message_id: 'm-3', $set: { email: 'u@example.com' } } }),
    ],
    [
      'page',
      { type: 'page', event: '$page', distinct_id: 'u', name: 'Pricing', category: 'Docs', messageId: 'm-4', properties: { path: '/pricing' } },
      normalized({ event: '$page', properties: { path: '/pricing', $type: 'page', $name: 'Pricing', $category: 'Docs', $message_id: 'm-4' } }),
    ],
    [
      'screen',
      { type: 'screen', event: '$screen', distinct_id: 'u', name: 'Home', category: 'Main', properties: { $name: 'set by the client' } },
      normalized({ event: '$screen', properties: { $type: 'screen', $name: 'set by the client', $category: 'Main' } }),
    ],
    [
      'posthog-node 3/4 extras: type kept, library fields repeat $lib and are not',
      { type: 'capture', library: 'posthog-node', library_version: '4.18.0', event: 'e', distinct_id: 'u', properties: { $lib: 'posthog-node', $lib_version: '4.18.0' } },
      normalized({ properties: { $lib: 'posthog-node', $lib_version: '4.18.0', $type: 'capture' } }),
    ],
  ] as const)('%s', (_name, raw, expected) => {
    expect(normalizeEvent(raw as RawEvent, ctx())).toEqual(expected);
  });
});

describe('normalizeEvent: properties', () => {
  test('top-level $set/$set_once (posthog-js) merge into properties, the top level winning', () => {
    const event = ok({ event: '$identify', distinct_id: 'u', $set: { a: 1, b: 2 }, $set_once: { c: 3 }, properties: { $set: { a: 0, z: 9 } } });
    expect(event).toEqual(normalized({ event: '$identify', set: { a: 1, b: 2, z: 9 }, setOnce: { c: 3 }, properties: { $set: { a: 1, b: 2, z: 9 }, $set_once: { c: 3 } } }).ok);
  });

  test('browser and campaign properties also go to the person, as PostHog does', () => {
    const event = ok({ event: '$pageview', distinct_id: 'u', properties: { $browser: 'Chrome', $os: 'Mac OS X', utm_source: 'news', title: 'T', $set: { $browser: 'mine' }, $set_once: { $initial_os: 'first' } } });
    expect(event).toEqual(
      normalized({
        event: '$pageview',
        set: { $browser: 'mine', $os: 'Mac OS X', utm_source: 'news' },
        setOnce: { $initial_os: 'first', $initial_browser: 'Chrome', $initial_utm_source: 'news' },
        properties: {
          $browser: 'Chrome', $os: 'Mac OS X', utm_source: 'news', title: 'T',
          $set: { $browser: 'mine', $os: 'Mac OS X', utm_source: 'news' },
          $set_once: { $initial_os: 'first', $initial_browser: 'Chrome', $initial_utm_source: 'news' },
        },
      }).ok,
    );
  });

  test.each([
    ['server SDKs do not lift the host $os', { $is_server: true, $os: 'Linux', $browser: 'x' }, { $browser: 'x' }, { $initial_browser: 'x' }],
    ['$os_name stands in for $os', { $os_name: 'iOS', $app_version: '2.0' }, { $app_version: '2.0', $os: 'iOS' }, { $initial_app_version: '2.0', $initial_os: 'iOS' }],
  ] as const)('%s', (_name, properties, set, setOnce) => {
    const event = ok({ event: 'e', distinct_id: 'u', properties });
    expect({ set: event.set, setOnce: event.setOnce }).toEqual({ set, setOnce });
  });

  test('$snapshot events do not feed the person', () => {
    expect(ok({ event: '$snapshot', distinct_id: 'u', properties: { $browser: 'Chrome' } }).properties).toEqual({ $browser: 'Chrome' });
  });

  test('$process_person_profile: false drops person updates (personless events)', () => {
    const event = ok({ event: '$pageview', distinct_id: 'anon', $set: { a: 1 }, properties: { $process_person_profile: false, $browser: 'Chrome' } });
    expect(event).toEqual(normalized({ event: '$pageview', distinctId: 'anon', processPerson: false, properties: { $process_person_profile: false, $browser: 'Chrome' } }).ok);
  });

  test.each([
    ['type → key', { company: 'acme', project: 42 }, { company: 'acme', project: '42' }],
    ['empty keys are left out', { company: '', team: null }, {}],
    ['not an object', 'acme', {}],
  ] as const)('$groups as %s', (_name, $groups, groups) => {
    expect(ok({ event: 'e', distinct_id: 'u', properties: { $groups } }).groups).toEqual(groups);
  });

  test.each([
    ['a list', ['a', 'b', 3], ['a', 'b']],
    ['an object', { a: null, b: 1 }, ['a', 'b']],
    ['anything else', 'a', []],
  ] as const)('$unset as %s', (_name, $unset, unset) => {
    expect(ok({ event: 'e', distinct_id: 'u', properties: { $unset } }).unset).toEqual([...unset]);
  });

  test.each([
    ['the request ip is added', { ip: '10.1.2.3' }, {}, { $ip: '10.1.2.3' }],
    ['a client $ip is kept', { ip: '10.1.2.3' }, { $ip: '192.168.0.1' }, { $ip: '192.168.0.1' }],
    ['anonymize_ips: none added', { ip: '10.1.2.3', anonymizeIps: true }, {}, {}],
    ['anonymize_ips: a client $ip is removed', { ip: '10.1.2.3', anonymizeIps: true }, { $ip: '192.168.0.1' }, {}],
    ['no ip known', {}, {}, {}],
    ['sent_at is recorded as $sent_at', { sentAt: new Date('2024-06-01T11:59:59Z') }, {}, { $sent_at: '2024-06-01T11:59:59.000Z' }],
  ] as const)('%s', (_name, overrides, properties, expected) => {
    expect(ok({ event: 'e', distinct_id: 'u', properties }, ctx(overrides)).properties).toEqual(expected);
  });

  test('$elements become elements_chain as PostHog builds it (PostHog test_capture_event)', () => {
    const $elements = [
      { tag_name: 'a', nth_child: 1, nth_of_type: 2, attr__class: 'btn btn-sm' },
      { tag_name: 'div', nth_child: 1, nth_of_type: 2, $el_text: '💻' },
    ];
    const event = ok({ event: '$autocapture', distinct_id: 2, properties: { $elements, $event_type: 'click' } });
    expect({ elementsChain: event.elementsChain, properties: event.properties }).toEqual({
      elementsChain: 'a.btn.btn-sm:attr__class="btn btn-sm"nth-child="1"nth-of-type="2";div:nth-child="1"nth-of-type="2"text="💻"',
      properties: { $event_type: 'click' },
    });
  });

  test('elements: ids, hrefs, sorted classes and escaped quotes', () => {
    const $elements = [{ tag_name: 'button', attr__class: ['z', 'a"b'], attr__id: 'buy', attr__href: '/x', attr__title: 'say "hi"', $el_text: 'Buy', nth_child: 3 }];
    expect(ok({ event: '$autocapture', distinct_id: 'u', properties: { $elements } }).elementsChain).toEqual(
      'button.ab.z:attr__class="z,a\\"b"attr__href="/x"attr__id="buy"attr__title="say \\"hi\\""attr_id="buy"href="/x"nth-child="3"nth-of-type="0"text="Buy"',
    );
  });

  test('$elements_chain (posthog-js) is taken as sent and leaves the properties', () => {
    const chain = 'button.btn:attr__id="buy"nth-child="2"nth-of-type="1"text="Buy now";body:nth-child="2"nth-of-type="1"';
    const event = ok({ event: '$autocapture', distinct_id: 'u', properties: { $elements_chain: chain, $elements: [{ tag_name: 'ignored' }] } });
    expect({ elementsChain: event.elementsChain, properties: event.properties }).toEqual({ elementsChain: chain, properties: {} });
  });

  test.each([
    ['$identify with $anon_distinct_id', { event: '$identify', properties: { $anon_distinct_id: 'anon-1' } }, { anonDistinctId: 'anon-1', alias: null }],
    ['$identify with a null $anon_distinct_id (refused later as "null")', { event: '$identify', properties: { $anon_distinct_id: null } }, { anonDistinctId: 'null', alias: null }],
    ['$create_alias with alias', { event: '$create_alias', properties: { alias: 42 } }, { anonDistinctId: null, alias: '42' }],
    ['$merge_dangerously with alias', { event: '$merge_dangerously', properties: { alias: 'x' } }, { anonDistinctId: null, alias: 'x' }],
    ['$create_alias with an empty alias', { event: '$create_alias', properties: { alias: '' } }, { anonDistinctId: null, alias: null }],
    ['other events carry neither', { event: 'e', properties: { alias: 'x', $anon_distinct_id: 'y' } }, { anonDistinctId: null, alias: null }],
  ] as const)('%s', (_name, raw, expected) => {
    const { anonDistinctId, alias } = ok({ distinct_id: 'u', ...raw } as RawEvent);
    expect({ anonDistinctId, alias }).toEqual(expected);
  });
});
