import { describe, expect, test } from 'bun:test';
import { prepareRows } from '../../src/pipeline/prepare-rows';

const ctx = { receivedAt: Date.parse('2024-05-01T12:00:00Z'), ip: null, anonymizeIps: false, sentAt: null };
let n = 0;
const newUuid = () => `0190a0a0-0000-7000-8000-${String(++n).padStart(12, '0')}`;
const summaryOf = (events: unknown[]) => prepareRows(ctx, events, newUuid).seen;
/** Each key with its type, as the summary pairs them. */
const typed = (keys: { names: readonly string[]; types: readonly unknown[] }) => keys.names.map((name, i) => [name, keys.types[i]]);

describe('the definitions a request shows (prepareRows seen summary)', () => {
  test('one event: its keys once each, with the type of its values', () => {
    const seen = summaryOf([{ event: 'e1', distinct_id: 'd1', properties: { n: 5, s: 'x', b: true, t: '2024-05-01T10:00:00Z', o: { k: 1 } }, $set: { email: 'a@b.c' } }]);
    expect(typed(seen.properties).filter(([name]) => !String(name).startsWith('$'))).toEqual([['n', 'Numeric'], ['s', 'String'], ['b', 'Boolean'], ['t', 'DateTime'], ['o', null]]);
    expect(typed(seen.personProperties)).toEqual([['email', 'String']]);
    expect(seen.eventProperties.map(([event, keys]) => [event, keys.filter((k) => !k.startsWith('$'))])).toEqual([['e1', ['n', 's', 'b', 't', 'o']]]);
  });

  test('many events: each key once, typed by the first value that shows a type, keys per event name', () => {
    const seen = summaryOf([
      { event: 'e1', distinct_id: 'd1', properties: { n: null, s: 'x' }, $set: {}, $set_once: { p: 1 } },
      { event: 'e2', distinct_id: 'd2', properties: { n: 5, s: 7, z: false }, $set: { p: 'q', r: true } },
      { event: 'e1', distinct_id: 'd3', properties: { y: 'new', s: 'again' } },
    ]);
    const own = (keys: { names: readonly string[]; types: readonly unknown[] }) => typed(keys).filter(([name]) => !String(name).startsWith('$'));
    expect(own(seen.properties)).toEqual([['n', 'Numeric'], ['s', 'String'], ['z', 'Boolean'], ['y', 'String']]);
    expect(typed(seen.personProperties)).toEqual([['p', 'Numeric'], ['r', 'Boolean']]);
    const perEvent = Object.fromEntries(seen.eventProperties.map(([event, keys]) => [event, keys.filter((k) => !k.startsWith('$'))]));
    expect(perEvent).toEqual({ e1: ['n', 's', 'y'], e2: ['n', 's', 'z'] });
    for (const keys of [seen.properties.names, seen.personProperties.names, ...seen.eventProperties.map(([, k]) => k)]) expect(new Set(keys).size).toBe(keys.length);
  });

  test('more keys than are searched in place, also added by one object: each once, typed by the first value that shows a type', () => {
    const many = (value: unknown) => Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`k${i}`, value]));
    const seen = summaryOf([
      { event: 'e', distinct_id: 'd1', properties: {}, $set: { a: null, b: 'x' }, $set_once: { c: 1 } },
      { event: 'e', distinct_id: 'd2', properties: {}, $set: many(null) },
      { event: 'e', distinct_id: 'd3', properties: {}, $set: { ...many(2), a: true, late: 'y' } },
      { event: 'e', distinct_id: 'd4', properties: {}, $set: { late: 3, b: 4 } },
    ]);
    expect(typed(seen.personProperties)).toEqual([
      ['a', 'Boolean'], ['b', 'String'], ['c', 'Numeric'],
      ...Array.from({ length: 70 }, (_, i) => [`k${i}`, 'Numeric']),
      ['late', 'String'],
    ]);
  });
});
