import { describe, expect, test } from 'bun:test';
import { EVENT_LIMITS, eventOverLimits } from '../../../src/core/ingest/limits';

const MB = 1024 * 1024;
const over = (properties: Record<string, unknown>, other: Partial<{ event: string; distinctId: string; elementsChain: string }> = {}) =>
  eventOverLimits(JSON.stringify(properties), properties, { event: 'e', distinctId: 'd', elementsChain: '', ...other });
const keys = (n: number, prefix = '') => Object.fromEntries(Array.from({ length: n }, (_, i) => [prefix + i.toString(36), 0]));

describe('eventOverLimits', () => {
  test.each([
    ['a usual event', { $browser: 'Firefox', n: 1 }, {}, null],
    ['just under 1 MB in all', { v: 'x'.repeat(MB - 100) }, {}, null],
    ['a 1 MB value', { v: 'x'.repeat(MB) }, {}, 'event_too_large'],
    ['a 1 MB key', { ['k'.repeat(MB)]: 1 }, {}, 'event_too_large'],
    ['under 1 MB of characters, over 1 MB of UTF-8 bytes', { v: 'é'.repeat(MB / 2 + 10) }, {}, 'event_too_large'],
    ['the elements chain counts', { v: 'x'.repeat(MB / 2) }, { elementsChain: 'a'.repeat(MB / 2) }, 'event_too_large'],
    ['10,000 properties', keys(10_000), {}, null],
    ['10,001 properties', keys(10_001), {}, 'too_many_properties'],
    ['$set keys are properties too', { ...keys(6_000), $set: keys(5_000, 's') }, {}, 'too_many_properties'],
    ['a nested value is one property', { data: keys(20_000) }, {}, null],
  ] as const)('%s', (_name, properties, other, expected) => {
    expect(over(properties, other)).toBe(expected);
  });

  test('the limits as documented', () => {
    expect(EVENT_LIMITS).toEqual({ eventBytes: MB, propertiesPerEvent: 10_000, propertyDefinitionsPerProject: 10_000, eventPropertiesPerProject: 50_000, propertyNameLength: 400 });
  });
});
