/**
 * Every recorded SDK request through decode → extract → normalize, with the resulting events
 * asserted whole. The node fixtures were recorded from the real libraries (record.ts); re-recording
 * changes their uuids and send times, and this table has to follow.
 */
import { describe, expect, test } from 'bun:test';
import { decodePayload } from '../../../src/core/ingest/decode-payload';
import { extractEvents } from '../../../src/core/ingest/extract-events';
import { normalizeEvent, type NormalizedEvent, type NormalizeResult } from '../../../src/core/ingest/normalize-event';
import { planPersonUpdates } from '../../../src/core/ingest/person-updates';
import { applyPersonOperations, emptyPersonState, lookupIn } from '../../../src/core/ingest/person-state';
import { fixtureBody, listSdkFixtures, loadSdkFixture } from '../../fixtures/sdk';

const NOW = '2026-11-22T06:06:00.000Z';
const IP = '203.0.113.7';
const TOKEN = 'phc_fixture_token_0123456789abcdefghijklmnopqrstuv';

function decodeFixture(name: string) {
  const fixture = loadSdkFixture(name);
  return decodePayload({
    body: fixtureBody(fixture),
    contentType: fixture.headers['content-type'],
    contentEncoding: fixture.headers['content-encoding'],
    query: new URLSearchParams(fixture.query),
    maxBytes: 20 * 1024 * 1024,
  });
}

function ingest(name: string) {
  const decoded = decodeFixture(name);
  const extracted = extractEvents(decoded.payload, { hints: decoded.hints });
  const context = { now: new Date(NOW), sentAt: extracted.sentAt === null ? null : new Date(extracted.sentAt), ip: IP, anonymizeIps: false, newUuid: () => 'generated' };
  return { decoded, extracted, results: extracted.events.map((raw) => normalizeEvent(raw, context)) };
}

/** The stored time of an event stamped `timestamp` in a request sent at `sentAt`: skew corrected against NOW. */
const skewed = (timestamp: string, sentAt: string) => Date.parse(NOW) + Date.parse(timestamp) - Date.parse(sentAt);

const base = (overrides: Partial<NormalizedEvent> & Pick<NormalizedEvent, 'uuid' | 'event' | 'distinctId' | 'properties' | 'timestamp'>): NormalizeResult => ({
  ok: { elementsChain: '', set: {}, setOnce: {}, unset: [], anonDistinctId: null, alias: null, processPerson: true, groups: {}, ...overrides },
});

type NodeSdk = 'node3' | 'node4' | 'node5';
const VERSIONS: Record<NodeSdk, string> = { node3: '3.6.3', node4: '4.18.0', node5: '5.70.0' };

/** What every posthog-node event carries besides its own properties, after normalization. */
function nodeProperties(sdk: NodeSdk, type: string, sentAt: string, own: Record<string, unknown>): Record<string, unknown> {
  return {
    ...own,
    $lib: 'posthog-node',
    $lib_version: VERSIONS[sdk],
    ...(sdk === 'node5' ? { $is_server: true } : { $type: type }),
    $geoip_disable: true,
    $sent_at: sentAt,
    $ip: IP,
  };
}

const CAPTURE = { plan: 'pro', seats: 3, nested: { a: [1, 2] }, emoji: '💻 Writing code', $groups: { company: 'acme' } };
const FLAG_CALLED_V3 = { $feature_flag: 'beta', $feature_flag_response: true, locally_evaluated: false, '$feature/beta': true };
const FLAG_CALLED = {
  $feature_flag: 'beta', $feature_flag_response: true, $feature_flag_id: 1, $feature_flag_version: 1, $feature_flag_reason: 'Matched condition set 1',
  locally_evaluated: false, '$feature/beta': true, $feature_flag_request_id: '00000000-0000-4000-8000-000000000000',
};
const GROUP = { $group_type: 'company', $group_key: 'acme', $group_set: { name: 'Acme Inc', employees: 42 } };

/** [fixture, uuid, event timestamp, sent_at] → the one event of each recorded posthog-node batch. */
function nodeCase(name: string, uuid: string, timestamp: string, sentAt: string): [string, NormalizeResult] {
  const sdk = name.split('-')[0] as NodeSdk;
  const kind = name.split('-').slice(2).join('-');
  const time = skewed(timestamp, sentAt);
  const props = (type: string, own: Record<string, unknown>) => nodeProperties(sdk, type, sentAt, own);
  const identifySet = { email: 'user1@example.com' };
  // posthog-node 3 drops $set_once from identify.
  const identifySetOnce = sdk === 'node3' ? {} : { first_seen: '2024-01-01' };
  const byKind: Record<string, NormalizeResult> = {
    capture: base({ uuid, event: 'plan upgraded', distinctId: 'user-1', timestamp: time, groups: { company: 'acme' }, properties: props('capture', CAPTURE) }),
    identify: base({
      uuid, event: '$identify', distinctId: 'user-1', timestamp: time, set: identifySet, setOnce: identifySetOnce,
      properties: props('identify', sdk === 'node3' ? { $set: identifySet } : { $set: identifySet, $set_once: identifySetOnce }),
    }),
    alias: base({ uuid, event: '$create_alias', distinctId: 'user-1', timestamp: time, alias: 'anon-device-1', properties: props('alias', { distinct_id: 'user-1', alias: 'anon-device-1' }) }),
    'group-identify': base({ uuid, event: '$groupidentify', distinctId: '$company_acme', timestamp: time, properties: props('capture', GROUP) }),
    'flag-called': base({ uuid, event: '$feature_flag_called', distinctId: 'user-1', timestamp: time, properties: props('capture', sdk === 'node3' ? FLAG_CALLED_V3 : FLAG_CALLED) }),
    shutdown: base({ uuid, event: 'last event before shutdown', distinctId: 'user-2', timestamp: time, properties: props('capture', { n: 1 }) }),
  };
  return [name, byKind[kind]];
}

const NODE_CASES: Array<[string, NormalizeResult]> = [
  nodeCase('node5-1-capture', '01a201dc-6611-72ed-be1f-eee24642178a', '2024-01-02T03:04:05.678Z', '2026-11-22T06:05:50.993Z'),
  nodeCase('node5-2-identify', '01a201dc-664f-76be-bc2c-f01ab668893a', '2026-11-22T06:05:51.055Z', '2026-11-22T06:05:51.055Z'),
  nodeCase('node5-3-alias', '01a201dc-6683-7498-b83f-63d451ca292a', '2026-11-22T06:05:51.107Z', '2026-11-22T06:05:51.107Z'),
  nodeCase('node5-4-group-identify', '01a201dc-66b7-722c-b83c-4636445d7195', '2026-11-22T06:05:51.159Z', '2026-11-22T06:05:51.159Z'),
  nodeCase('node5-6-flag-called', '01a201dc-66ec-77f3-bbfd-f580d8ec0909', '2026-11-22T06:05:51.212Z', '2026-11-22T06:05:51.212Z'),
  nodeCase('node5-7-shutdown', '01a201dc-6721-7ed8-9fe5-0fbed4f1d736', '2026-11-22T06:05:51.265Z', '2026-11-22T06:05:51.265Z'),
  nodeCase('node4-1-capture', '01a201dc-6758-773a-abda-727089ac34f3', '2024-01-02T03:04:05.678Z', '2026-11-22T06:05:51.320Z'),
  nodeCase('node4-2-identify', '01a201dc-6794-7644-9051-6f4df0196401', '2026-11-22T06:05:51.380Z', '2026-11-22T06:05:51.381Z'),
  nodeCase('node4-3-alias', '01a201dc-67c7-75a9-b33c-10ab22cae255', '2026-11-22T06:05:51.431Z', '2026-11-22T06:05:51.432Z'),
  nodeCase('node4-4-group-identify', '01a201dc-67fb-7475-b314-ce5b8b719535', '2026-11-22T06:05:51.483Z', '2026-11-22T06:05:51.484Z'),
  nodeCase('node4-6-flag-called', '01a201dc-6830-778d-93ed-4ce6aad13d74', '2026-11-22T06:05:51.536Z', '2026-11-22T06:05:51.536Z'),
  nodeCase('node4-7-shutdown', '01a201dc-6864-7513-9f6e-d880d5dcea88', '2026-11-22T06:05:51.588Z', '2026-11-22T06:05:51.588Z'),
  nodeCase('node3-1-capture', '01a201dc-68cf-7e54-ad88-f667a802ee81', '2024-01-02T03:04:05.678Z', '2026-11-22T06:05:51.695Z'),
  nodeCase('node3-2-identify', '01a201dc-690b-7f44-8474-751eceae8aac', '2026-11-22T06:05:51.755Z', '2026-11-22T06:05:51.755Z'),
  nodeCase('node3-3-alias', '01a201dc-6949-7bfe-a79a-6a0fc16a3cfa', '2026-11-22T06:05:51.817Z', '2026-11-22T06:05:51.817Z'),
  nodeCase('node3-4-group-identify', '01a201dc-6987-7d93-969c-917f4f5b2e80', '2026-11-22T06:05:51.879Z', '2026-11-22T06:05:51.879Z'),
  nodeCase('node3-6-flag-called', '01a201dc-69c8-7dca-8b46-b4e264ce33b5', '2026-11-22T06:05:51.944Z', '2026-11-22T06:05:51.944Z'),
  nodeCase('node3-7-shutdown', '01a201dc-6a05-7924-94cd-eaf9e33fca5e', '2026-11-22T06:05:52.005Z', '2026-11-22T06:05:52.005Z'),
  [
    'node4form-1-capture',
    base({
      uuid: '01a201dc-6897-7b69-8ac7-565e5c4493ee', event: 'form mode event', distinctId: 'user-3',
      timestamp: skewed('2024-01-02T03:04:05.678Z', '2026-11-22T06:05:51.639Z'),
      properties: nodeProperties('node4', 'capture', '2026-11-22T06:05:51.639Z', { via: 'lz64 form', emoji: '🤓' }),
    }),
  ],
];

describe('posthog-node fixtures (recorded)', () => {
  test.each(NODE_CASES)('%s', (name, expected) => {
    const { extracted, results } = ingest(name);
    expect({ token: extracted.token, results }).toEqual({ token: TOKEN, results: [expected] });
  });

  test.each([
    ['node5-5-flags', { token: TOKEN, distinct_id: 'user-1', groups: {}, person_properties: {}, group_properties: {}, geoip_disable: true, flag_keys_to_evaluate: ['beta'], evaluation_runtime: 'server' }],
    ['node4-5-flags', { token: TOKEN, distinct_id: 'user-1', groups: {}, person_properties: { distinct_id: 'user-1' }, group_properties: {}, geoip_disable: true, flag_keys_to_evaluate: ['beta'] }],
    ['node3-5-flags', { token: TOKEN, distinct_id: 'user-1', groups: {}, person_properties: { distinct_id: 'user-1' }, group_properties: {}, geoip_disable: true }],
  ] as const)('%s decodes to its flags request', (name, payload) => {
    expect(decodeFixture(name).payload).toEqual(payload);
  });
});

// posthog-js fixtures (built per real-clients.md): the properties every event of the visit carries.
const ANON = '018f4c2a-0000-7000-8000-00000000a001';
const USER = 'browser-user-1';
const JS_SENT_AT = '2024-05-06T07:08:09.100Z';
const URL_ = 'https://shop.example.com/pricing?utm_source=newsletter';

function webProperties(distinctId: string, own: Record<string, unknown>): Record<string, unknown> {
  const identified = distinctId !== ANON;
  return {
    token: TOKEN, distinct_id: distinctId, $device_id: ANON, $session_id: '018f4c2a-0000-7000-8000-00000000b001', $window_id: '018f4c2a-0000-7000-8000-00000000c001',
    $lib: 'web', $lib_version: '1.449.2', $current_url: URL_, $host: 'shop.example.com', $pathname: '/pricing',
    $browser: 'Chrome', $browser_version: 126, $os: 'Mac OS X', $os_version: '14.5.0', $device_type: 'Desktop',
    $screen_height: 1117, $screen_width: 1728, $referrer: '$direct', $referring_domain: '$direct', utm_source: 'newsletter',
    $timezone: 'Europe/Berlin', $is_identified: identified, $process_person_profile: identified,
    ...own,
    $sent_at: JS_SENT_AT,
    $ip: IP,
  };
}

// What ingestion copies from a browser event to its person (plugin-server personInitialAndUTMProperties).
const WEB_SET = {
  $browser: 'Chrome', $browser_version: 126, $device_type: 'Desktop', $current_url: URL_, $pathname: '/pricing',
  $os: 'Mac OS X', $os_version: '14.5.0', $referring_domain: '$direct', $referrer: '$direct', utm_source: 'newsletter',
};
const WEB_SET_ONCE = {
  $initial_browser: 'Chrome', $initial_browser_version: 126, $initial_device_type: 'Desktop', $initial_current_url: URL_, $initial_pathname: '/pricing',
  $initial_os: 'Mac OS X', $initial_os_version: '14.5.0', $initial_referring_domain: '$direct', $initial_referrer: '$direct', $initial_utm_source: 'newsletter',
};

function webEvent(uuid: string, event: string, distinctId: string, timestamp: number, own: Record<string, unknown>, extra: Partial<NormalizedEvent> = {}): NormalizeResult {
  if (distinctId === ANON) return base({ uuid, event, distinctId, timestamp, processPerson: false, properties: webProperties(distinctId, own), ...extra });
  const set = { ...(extra.set ?? {}), ...WEB_SET };
  const setOnce = { ...WEB_SET_ONCE, ...(extra.setOnce ?? {}) };
  return base({ uuid, event, distinctId, timestamp, ...extra, set, setOnce, properties: { ...webProperties(distinctId, own), $set: set, $set_once: setOnce } });
}

const CHAIN = 'button.btn.primary:attr__class="btn primary"attr__data-attr="buy-button"attr__id="buy"nth-child="2"nth-of-type="1"text="Buy now";body:nth-child="2"nth-of-type="1"';
const IDENTIFY_SET = { email: 'browser-user-1@example.com', plan: 'free' };
const IDENTIFY_SET_ONCE = { first_seen: '2024-05-06', $initial_referrer: '$direct' };

const pageview = (timestamp: number) =>
  webEvent('018f4c2a-0001-7000-8000-000000000001', '$pageview', ANON, timestamp, { title: 'Pricing', $pageview_id: '018f4c2a-0001-7000-8000-000000000001' });
const identifyEvent = (timestamp: number) =>
  webEvent('018f4c2a-0003-7000-8000-000000000003', '$identify', USER, timestamp, { $anon_distinct_id: ANON }, { anonDistinctId: ANON, set: IDENTIFY_SET, setOnce: IDENTIFY_SET_ONCE });
const exitEvents = (timestamps: [number, number, number]) => [
  webEvent('018f4c2a-0004-7000-8000-000000000004', '$create_alias', USER, timestamps[0], { alias: 'crm-42' }, { alias: 'crm-42' }),
  webEvent('018f4c2a-0005-7000-8000-000000000005', '$groupidentify', USER, timestamps[1], { $group_type: 'company', $group_key: 'acme', $group_set: { name: 'Acme Inc' } }),
  webEvent('018f4c2a-0006-7000-8000-000000000006', '$pageleave', USER, timestamps[2], { $groups: { company: 'acme' }, $prev_pageview_pathname: '/pricing' }, { groups: { company: 'acme' } }),
];
const js = (timestamp: string) => skewed(timestamp, JS_SENT_AT);
const beforeNow = (offset: number) => Date.parse(NOW) - offset;

describe('posthog-js fixtures (built from real-clients.md)', () => {
  test.each([
    ['js-1-gzip-batch', 'gzip', [pageview(js('2024-05-06T07:08:01.000Z')), webEvent('018f4c2a-0002-7000-8000-000000000002', '$autocapture', ANON, js('2024-05-06T07:08:03.500Z'), { $event_type: 'click', $el_text: 'Buy now' }, { elementsChain: CHAIN })]],
    ['js-2-json-identify', 'none', [identifyEvent(js('2024-05-06T07:08:05.000Z'))]],
    ['js-3-beacon-base64', 'base64', exitEvents([js('2024-05-06T07:08:06.000Z'), js('2024-05-06T07:08:07.000Z'), js('2024-05-06T07:08:08.000Z')])],
    // Legacy bodies carry no sent_at: it comes from the query `_`.
    ['js-legacy-1-gzip-js-single', 'gzip', [pageview(js('2024-05-06T07:08:01.000Z'))]],
    ['js-legacy-2-gzip-js-beacon-array', 'gzip', exitEvents([beforeNow(3000), beforeNow(2000), beforeNow(1000)])],
    ['js-legacy-3-lz64-form', 'lz64', [identifyEvent(beforeNow(500))]],
    ['js-legacy-4-get-image', 'base64', [identifyEvent(Date.parse(NOW))]],
  ] as const)('%s', (name, compression, expected) => {
    const { decoded, extracted, results } = ingest(name);
    expect({ compression: decoded.compression, token: extracted.token, sentAt: extracted.sentAt, results }).toEqual({
      compression,
      token: TOKEN,
      sentAt: Date.parse(JS_SENT_AT),
      results: [...expected],
    });
  });

  test('the visit leaves one identified person with every id, and the group', () => {
    let state = emptyPersonState();
    let n = 0;
    for (const name of ['js-1-gzip-batch', 'js-2-json-identify', 'js-3-beacon-base64']) {
      for (const result of ingest(name).results) {
        if (!('ok' in result)) throw new Error(result.drop);
        state = applyPersonOperations(state, planPersonUpdates(result.ok, lookupIn(state), () => `person-${++n}`).operations);
      }
    }
    expect(state).toEqual({
      persons: {
        'person-1': {
          personId: 'person-1',
          distinctIds: [USER, ANON, 'crm-42'],
          properties: { ...WEB_SET_ONCE, ...IDENTIFY_SET_ONCE, ...IDENTIFY_SET, ...WEB_SET, $creator_event_uuid: '018f4c2a-0003-7000-8000-000000000003' },
          isIdentified: true,
          createdAt: js('2024-05-06T07:08:05.000Z'),
        },
      },
      distinctIds: { [USER]: 'person-1', [ANON]: 'person-1', 'crm-42': 'person-1' },
      groups: { company: { acme: { name: 'Acme Inc' } } },
    });
  });
});

test('every fixture file is covered by a case above', () => {
  const covered = [...NODE_CASES.map(([name]) => name), 'node5-5-flags', 'node4-5-flags', 'node3-5-flags',
    'js-1-gzip-batch', 'js-2-json-identify', 'js-3-beacon-base64', 'js-legacy-1-gzip-js-single', 'js-legacy-2-gzip-js-beacon-array', 'js-legacy-3-lz64-form', 'js-legacy-4-get-image'];
  expect(listSdkFixtures()).toEqual(covered.sort());
});
