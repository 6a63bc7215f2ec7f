import { describe, expect, test } from 'bun:test';
import { extractEvents, type ExtractedEvents } from '../../../src/core/ingest/extract-events';
import { thrown } from './helpers';

const E1 = { event: 'a', distinct_id: 'u1' };
const E2 = { event: 'b', properties: { distinct_id: 'u2', token: 'phc_in_props' } };
const NO_HINTS = { token: null, projectId: null, sentAt: null };

const result = (overrides: Partial<ExtractedEvents>): ExtractedEvents => ({
  token: null,
  isPersonalKey: false,
  projectId: null,
  sentAt: null,
  historicalMigration: false,
  events: [],
  ...overrides,
});

describe('extractEvents: payload shapes', () => {
  test.each([
    ['one event', { ...E1, api_key: 'phc_T' }, result({ token: 'phc_T', events: [{ ...E1, api_key: 'phc_T' }] })],
    ['a bare array (posthog-js)', [E1, E2], result({ token: 'phc_in_props', events: [E1, E2] })],
    [
      '{api_key, batch, sent_at, historical_migration} (posthog-node)',
      { api_key: 'phc_T', batch: [E1, E2], sent_at: '2024-01-02T03:04:05.678Z', historical_migration: true },
      result({ token: 'phc_T', sentAt: Date.parse('2024-01-02T03:04:05.678Z'), historicalMigration: true, events: [E1, E2] }),
    ],
    ['{batch: []} is valid and empty', { api_key: 'phc_T', batch: [] }, result({ token: 'phc_T' })],
    ['{data: {batch}}', { data: { api_key: 'phc_T', batch: [E1] } }, result({ token: 'phc_T', events: [E1] })],
    ['{api_key, data: [events]}', { api_key: 'phc_T', data: [E1] }, result({ token: 'phc_T', events: [E1] })],
  ] as const)('%s', (_name, payload, expected) => {
    expect(extractEvents(payload, { hints: NO_HINTS })).toEqual(expected);
  });

  test('a body read back from the log (answered 200 by an earlier version) skips entries that are not objects', () => {
    expect(extractEvents({ api_key: 'phc_T', batch: [null, E1, 'x', 3, E2] }, { logged: true })).toEqual(result({ token: 'phc_T', events: [E1, E2] }));
  });

  test('/engage: an object without an event name is an $identify (PostHog test_engage)', () => {
    const engage = { $set: { $os: 'Mac OS X' }, $token: 'token123', $distinct_id: 3, $device_id: '16fd4a', $user_id: 3 };
    expect(extractEvents(engage, { engage: true })).toEqual(result({ token: 'token123', events: [{ ...engage, event: '$identify' }] }));
    expect(extractEvents(engage).events).toEqual([engage]);
  });

  test.each([
    ['a string', 'hello', 'Invalid payload: expected an event, a list of events or {"batch": [...]}.', null],
    ['a number', 42, 'Invalid payload: expected an event, a list of events or {"batch": [...]}.', null],
    ['null', null, 'Invalid payload: expected an event, a list of events or {"batch": [...]}.', null],
    ['batch as a string (PostHog test)', { api_key: 'phc_T', batch: '[{"event":"a"}]' }, 'Invalid payload: "batch" must be a list of events.', 'batch'],
    ['{} (PostHog test_empty_request_returns_an_error)', {}, 'No data found. Make sure to use a POST request when sending the payload in the body of the request.', null],
    ['[]', [], 'No data found. Make sure to use a POST request when sending the payload in the body of the request.', null],
    ['a null in a batch', { api_key: 'phc_T', batch: [E1, null, E2] }, 'Invalid payload: event 1 is not an object (got null).', 'batch'],
    ['a string in a batch', { api_key: 'phc_T', batch: ['x'] }, 'Invalid payload: event 0 is not an object (got a string).', null],
    ['a number in a bare array', [E1, 3], 'Invalid payload: event 1 is not an object (got a number).', 'batch'],
    ['a list in a batch', { batch: [E1, [E2]] }, 'Invalid payload: event 1 is not an object (got a list).', 'batch'],
    ['properties a string', { api_key: 'phc_T', batch: [{ ...E1, properties: 'nope' }] }, 'Invalid payload: the properties of event 0 must be an object (got a string).', 'properties'],
    ['properties a list', { ...E1, properties: [1] }, 'Invalid payload: the properties of event 0 must be an object (got a list).', 'properties'],
  ] as const)('400 for %s', (_name, payload, detail, attr) => {
    expect(thrown(() => extractEvents(payload))).toEqual({ kind: 'invalid_payload', status: 400, detail, attr });
  });
});

describe('extractEvents: where the key is', () => {
  test.each([
    ['top-level api_key', { api_key: 'phc_a', batch: [E2] }, NO_HINTS, 'phc_a'],
    ['top-level token', { token: 'phc_b', batch: [E1] }, NO_HINTS, 'phc_b'],
    ['top-level $token (old posthog-js)', { $token: 'phc_c', event: 'e' }, NO_HINTS, 'phc_c'],
    ['$token before token before api_key', { api_key: 'phc_3', token: 'phc_2', $token: 'phc_1', event: 'e' }, NO_HINTS, 'phc_1'],
    ['properties.token of a single event', { event: 'e', properties: { token: 'phc_d' } }, NO_HINTS, 'phc_d'],
    ['the first event that has one', [E1, { ...E1, api_key: 'phc_e' }, E2], NO_HINTS, 'phc_e'],
    ['query/form hint before the body', { api_key: 'phc_body', batch: [E1] }, { token: 'phc_query', projectId: null, sentAt: null }, 'phc_query'],
    ['no key anywhere', [E1], NO_HINTS, null],
    ['a non-string key counts as none (PostHog: not_string)', { api_key: { some: 'object' }, batch: [E1] }, NO_HINTS, null],
    ['an empty key counts as none', { api_key: '', batch: [E2] }, NO_HINTS, 'phc_in_props'],
  ] as const)('%s', (_name, payload, hints, token) => {
    expect(extractEvents(payload, { hints }).token).toEqual(token);
  });

  test.each([
    ['a project key', { api_key: 'phc_T', batch: [E1] }, NO_HINTS, { token: 'phc_T', isPersonalKey: false, projectId: null }],
    ['a personal key with project_id at the top', { api_key: 'phx_P', project_id: 7, batch: [E1] }, NO_HINTS, { token: 'phx_P', isPersonalKey: true, projectId: '7' }],
    ['a personal key with project_id on the event', { api_key: 'phx_P', batch: [{ ...E1, project_id: '8' }] }, NO_HINTS, { token: 'phx_P', isPersonalKey: true, projectId: '8' }],
    ['project_id in the query', { api_key: 'phx_P', project_id: 7, batch: [E1] }, { token: null, projectId: '9', sentAt: null }, { token: 'phx_P', isPersonalKey: true, projectId: '9' }],
    ['a personal key without project_id', { api_key: 'phx_P', batch: [E1] }, NO_HINTS, { token: 'phx_P', isPersonalKey: true, projectId: null }],
  ] as const)('personal keys and project_id: %s', (_name, payload, hints, expected) => {
    const { token, isPersonalKey, projectId } = extractEvents(payload, { hints });
    expect({ token, isPersonalKey, projectId }).toEqual(expected);
  });

  test.each([
    ['body sent_at', { sent_at: '2024-01-01T00:00:05Z', batch: [E1] }, NO_HINTS, Date.parse('2024-01-01T00:00:05Z')],
    ['query _ in ms (posthog-js 1.200)', [E1], { token: null, projectId: null, sentAt: '1714979289100' }, 1714979289100],
    ['query _ in seconds', [E1], { token: null, projectId: null, sentAt: '1714979289' }, 1714979289000],
    ['body before query', { sent_at: '2024-01-01T00:00:05Z', batch: [E1] }, { token: null, projectId: null, sentAt: '1714979289100' }, Date.parse('2024-01-01T00:00:05Z')],
    ['an unreadable sent_at is ignored', { sent_at: 'yesterday', batch: [E1] }, NO_HINTS, null],
  ] as const)('sent_at: %s', (_name, payload, hints, sentAt) => {
    expect(extractEvents(payload, { hints }).sentAt).toEqual(sentAt);
  });
});
