import { describe, expect, test } from 'bun:test';
import { FLAG_OPERATORS, matchProperty } from '../../../src/core/flags/match-property';

const NOW = new Date('2024-06-15T12:00:00Z');

type Row = [description: string, value: unknown, properties: Record<string, unknown>, expected: boolean];

const runTable = (operator: string, rows: Row[]) =>
  test.each(rows)(`${operator}: %s`, (_description, value, properties, expected) => {
    expect(matchProperty({ key: 'key', value, operator, type: 'person' }, properties, NOW)).toBe(expected);
  });

describe('exact (also the default operator)', () => {
  runTable('exact', [
    ['equal strings', 'value', { key: 'value' }, true],
    ['different strings', 'value', { key: 'value2' }, false],
    ['empty string', 'value', { key: '' }, false],
    ['null is the text "null"', 'value', { key: null }, false],
    ['case-insensitive', 'VaLuE', { key: 'value' }, true],
    ['missing key', 'value', { key2: 'value' }, false],
    ['list is any-of', ['value1', 'value2', 'value3'], { key: 'value2' }, true],
    ['list, no member', ['value1', 'value2', 'value3'], { key: 'value4' }, false],
    ['list is case-insensitive both ways', ['US', 'CA', 'Uk'], { key: 'uk' }, true],
    ['empty list never matches a plain value', [], { key: 'us' }, false],
    ['number against its text', '5', { key: 5 }, true],
    ['text against a number filter', 5, { key: '5' }, true],
    ['boolean filter against text', true, { key: 'true' }, true],
    ['"True" filter against a boolean', 'True', { key: true }, true],
    ['"false" filter against false', 'false', { key: false }, true],
    ['"false" filter against a non-boolean', 'false', { key: 'no' }, true],
    ['true filter against a number 1', true, { key: 1 }, false],
  ]);

  test('a filter without an operator is exact', () => {
    expect(matchProperty({ key: 'key', value: 'value' }, { key: 'VALUE' }, NOW)).toBe(true);
  });

  test('a null filter value matches nothing', () => {
    expect(matchProperty({ key: 'key', value: null, operator: 'exact' }, { key: null }, NOW)).toBe(false);
  });
});

describe('is_not', () => {
  runTable('is_not', [
    ['different value', 'value', { key: 'value2' }, true],
    ['empty string', 'value', { key: '' }, true],
    ['null', 'value', { key: null }, true],
    ['same value', 'value', { key: 'value' }, false],
    ['same value, other case', 'value', { key: 'VALUE' }, false],
    ['missing key counts as "is not"', 'value', {}, true],
    ['list, not a member', ['value1', 'value2'], { key: 'value3' }, true],
    ['list, a member', ['value1', 'value2'], { key: 'value1' }, false],
  ]);
});

describe('is_set / is_not_set', () => {
  runTable('is_set', [
    ['present', 'value', { key: 'anything' }, true],
    ['present and empty', 'value', { key: '' }, true],
    ['present and null', 'value', { key: null }, true],
    ['missing', 'value', { key2: 'value' }, false],
    ['no filter value needed', null, { key: 1 }, true],
  ]);
  runTable('is_not_set', [
    ['present', 'is_not_set', { key: 'value' }, false],
    ['present and null', 'is_not_set', { key: null }, false],
    ['missing', 'is_not_set', { key2: 'value' }, true],
  ]);
});

describe('icontains / not_icontains', () => {
  runTable('icontains', [
    ['substring, mixed case', 'valUe', { key: 'vaLue4' }, true],
    ['inside a longer text', 'valUe', { key: '343tfvalue5' }, true],
    ['absent substring', 'valUe', { key: 'Alakazam' }, false],
    ['number is read as text', '3', { key: 323 }, true],
    ['number without the digit', 'valUe', { key: 123 }, false],
    ['missing key', 'value', {}, false],
    ['only ASCII letters fold', 'É', { key: 'é' }, false],
  ]);
  runTable('not_icontains', [
    ['absent substring', 'value', { key: 'Alakazam' }, true],
    ['present substring', 'value', { key: 'my VALUE' }, false],
    ['missing key matches', 'value', {}, true],
  ]);
});

describe('icontains_multi / not_icontains_multi', () => {
  runTable('icontains_multi', [
    ['any of the values', ['foo', 'Bar'], { key: 'a bar b' }, true],
    ['none of the values', ['foo', 'bar'], { key: 'baz' }, false],
    ['a single value works too', 'foo', { key: 'xFOOx' }, true],
    ['missing key', ['foo'], {}, false],
  ]);
  runTable('not_icontains_multi', [
    ['none of the values', ['foo', 'bar'], { key: 'baz' }, true],
    ['one of the values', ['foo', 'bar'], { key: 'foobar' }, false],
    ['missing key matches', ['foo'], {}, true],
  ]);
});

describe('regex / not_regex', () => {
  runTable('regex', [
    ['matches anywhere (search)', 'alue', { key: 'value' }, true],
    ['anchored pattern', '^value$', { key: 'value2' }, false],
    ['number haystack', '3', { key: 323 }, true],
    ['number pattern', 4, { key: '4' }, true],
    ['number pattern, number haystack', 4, { key: 4 }, true],
    ['no match', '3', { key: 'three' }, false],
    ['invalid pattern never matches', '?*', { key: 'value' }, false],
    ['inline case-insensitive flag', '(?i)^VALUE$', { key: 'value' }, true],
    ['escaped dot', '\\.com$', { key: 'value.com' }, true],
    ['missing key', '\\.com$', { key2: 'value.com' }, false],
  ]);
  runTable('not_regex', [
    ['no match', '\\.com$', { key: 'value.org' }, true],
    ['match', '\\.com$', { key: 'value.com' }, false],
    ['invalid pattern never matches either', '?*', { key: 'value' }, false],
    ['missing key matches', '\\.com$', { key2: 'value.com' }, true],
  ]);
});

describe('gt / gte / lt / lte compare numbers only', () => {
  runTable('gt', [
    ['greater', 1, { key: 2 }, true],
    ['smaller', 1, { key: 0 }, false],
    ['equal', 1, { key: 1 }, false],
    ['numeric text property', 1, { key: '23' }, true],
    ['numeric text filter', '10', { key: 9.5 }, false],
    ['text that is not a number', 1, { key: 'abc' }, false],
    ['filter that is not a number', 'abc', { key: 'abd' }, false],
    ['boolean property', 0, { key: true }, false],
    ['null property', 0, { key: null }, false],
    ['missing key', 1, {}, false],
  ]);
  runTable('gte', [
    ['equal', 1, { key: 1 }, true],
    ['greater', 1, { key: 2 }, true],
    ['smaller', 1, { key: 0 }, false],
    ['numeric text', 1, { key: '3' }, true],
  ]);
  runTable('lt', [
    ['smaller', 1, { key: -3 }, true],
    ['equal', 1, { key: 1 }, false],
    ['equal as text', 1, { key: '1' }, false],
    ['text vs text is numeric', '43', { key: '42' }, true],
    ['number vs text filter', '43', { key: 44 }, false],
    ['"100" is not below "30" (numbers, not text)', '30', { key: '100' }, false],
    ['number 100 against "30"', '30', { key: 100 }, false],
  ]);
  runTable('lte', [
    ['equal', 1, { key: 1 }, true],
    ['smaller', 1, { key: 0 }, true],
    ['greater', 1, { key: 2 }, false],
    ['exponent notation', '1e3', { key: 999 }, true],
  ]);
});

describe('is_date_before / is_date_after / is_date_exact', () => {
  runTable('is_date_before', [
    ['earlier ISO date', '2022-05-01', { key: '2022-03-01' }, true],
    ['later ISO date', '2022-05-01', { key: '2022-05-30' }, false],
    ['date-time with offset', '2022-05-01', { key: '2022-04-30T23:00:00-02:00' }, false],
    ['epoch seconds as number', '2022-05-01', { key: 1640995200 }, true],
    ['epoch seconds as text', '2022-05-01', { key: '1640995200' }, true],
    ['relative -3d, four days ago', '-3d', { key: '2024-06-11T12:00:00Z' }, true],
    ['relative -3d, two days ago', '-3d', { key: '2024-06-13T12:00:00Z' }, false],
    ['relative without the minus sign', '3d', { key: '2024-06-11T12:00:00Z' }, true],
    ['relative hours', '-1h', { key: '2024-06-15T10:59:59Z' }, true],
    ['relative weeks', '-2w', { key: '2024-05-31T11:59:59Z' }, true],
    ['relative months', '-1m', { key: '2024-05-15T12:00:01Z' }, false],
    ['relative years', '-1y', { key: '2023-06-15T11:00:00Z' }, true],
    ['relative amount of 10000 is not a date', '-10000d', { key: '2020-01-01' }, false],
    ['invalid property', '2022-05-01', { key: 'invalid-date' }, false],
    ['null property', '-3d', { key: null }, false],
    ['boolean property', '2022-05-01', { key: true }, false],
    ['missing key', '2022-05-01', {}, false],
    ['invalid filter', 'not a date', { key: '2022-03-01' }, false],
    ['numeric filter is not a date', 20220501, { key: '2022-03-01' }, false],
    ['impossible calendar date', '2022-02-30', { key: '2022-01-01' }, false],
  ]);
  runTable('is_date_after', [
    ['ISO date-time with microseconds', '2023-06-04', { key: '2025-01-24T23:20:24.865148+00:00' }, true],
    ['earlier date-time', '2023-06-04', { key: '2023-01-24T23:20:24.865148+00:00' }, false],
    ['epoch seconds after', '2027-03-21T00:00:00Z', { key: 1836277747 }, true],
    ['epoch text after', '2027-03-21T00:00:00Z', { key: '1836277747' }, true],
    ['epoch seconds before', '2027-03-21T00:00:00Z', { key: 1747793088 }, false],
    ['naive date-time is UTC', '2024-01-01T00:00:00', { key: '2024-01-01T00:00:01Z' }, true],
    ['space separator', '2024-01-01 00:00', { key: '2024-01-01 00:00:00.5' }, true],
  ]);
  runTable('is_date_exact', [
    ['same instant', '2024-03-21T00:00:00Z', { key: '2024-03-21T00:00:00Z' }, true],
    ['other day', '2024-03-21T00:00:00Z', { key: '2024-03-22T00:00:00Z' }, false],
    ['same instant as epoch seconds', '2024-03-21T00:00:00Z', { key: 1710979200 }, true],
    ['same instant as epoch text', '2024-03-21T00:00:00Z', { key: '1710979200' }, true],
    ['same instant as a float', '2024-03-21T00:00:00Z', { key: 1710979200.0 }, true],
    ['same instant in another offset', '2024-03-21T00:00:00Z', { key: '2024-03-21T02:00:00+02:00' }, true],
    ['a bare date is its midnight', '2024-03-21', { key: '2024-03-21T00:00:00Z' }, true],
    ['invalid', '2024-03-21T00:00:00Z', { key: 'invalid-date' }, false],
  ]);
});

describe('semver operators', () => {
  runTable('semver_gt', [
    ['patch above', '1.0.0', { key: '1.0.1' }, true],
    ['major above', '1.0.0', { key: '2.0.0' }, true],
    ['equal', '1.0.0', { key: '1.0.0' }, false],
    ['below', '1.0.0', { key: '0.9.9' }, false],
    ['numeric not lexical', '1.9.0', { key: '1.10.0' }, true],
    ['v prefix', '1.0.0', { key: 'v1.2.0' }, true],
    ['missing parts are zero', '3.1', { key: '3.10' }, true],
    ['leading zeros are stripped', '3.8.0', { key: '3.08.1' }, true],
    ['release above its pre-release', '1.0.0-alpha', { key: '1.0.0' }, true],
    ['not a version', '1.0.0', { key: 'abc' }, false],
    ['four parts is not a version', '1.0.0', { key: '1.2.3.4' }, false],
    ['invalid filter', 'abc', { key: '1.0.0' }, false],
    ['missing key', '1.0.0', {}, false],
  ]);
  runTable('semver_gte', [
    ['0.0.0 against itself', '0.0.0', { key: '0.0.0' }, true],
    ['above', '0.0.0', { key: '0.0.1' }, true],
  ]);
  runTable('semver_lt', [
    ['below', '1.0.0', { key: '0.9.9' }, true],
    ['pre-release below release', '1.0.0', { key: '1.0.0-beta.2' }, true],
    ['numeric pre-release ids compare as numbers', '1.0.0-beta.11', { key: '1.0.0-beta.2' }, true],
  ]);
  runTable('semver_lte', [['equal', '2.1.0', { key: '2.1' }, true]]);
  runTable('semver_eq', [
    ['padded equal', '1.2', { key: '1.2.0' }, true],
    ['different', '1.2.0', { key: '1.2.1' }, false],
  ]);
  runTable('semver_neq', [
    ['different', '1.2.0', { key: '1.2.1' }, true],
    ['equal', '1.2.0', { key: 'v1.2.0' }, false],
  ]);
  runTable('semver_tilde', [
    ['same minor, higher patch', '1.2.3', { key: '1.2.9' }, true],
    ['lower patch', '1.2.3', { key: '1.2.2' }, false],
    ['next minor', '1.2.3', { key: '1.3.0' }, false],
    ['"~1" is read as ~1.0.0', '1', { key: '1.1.0' }, false],
  ]);
  runTable('semver_caret', [
    ['same major', '1.2.3', { key: '1.9.0' }, true],
    ['next major', '1.2.3', { key: '2.0.0' }, false],
    ['0.x pins the minor', '0.2.3', { key: '0.3.0' }, false],
    ['0.x, same minor', '0.2.3', { key: '0.2.9' }, true],
    ['0.0.x pins the patch', '0.0.3', { key: '0.0.4' }, false],
    ['pre-releases of other versions are excluded', '1.2.3', { key: '1.3.0-beta' }, false],
  ]);
  runTable('semver_wildcard', [
    ['minor wildcard', '1.2.*', { key: '1.2.7' }, true],
    ['minor wildcard, other minor', '1.2.*', { key: '1.3.0' }, false],
    ['major wildcard', '1.*', { key: '1.99.0' }, true],
    ['double wildcard', '1.*.*', { key: '2.0.0' }, false],
    ['x as wildcard', '1.x', { key: '1.4.0' }, true],
    ['everything', '*', { key: '7.0.0' }, true],
    ['wildcard before a number is invalid', '1.*.3', { key: '1.0.3' }, false],
  ]);
});

describe('cohort and flag operators are not decided here', () => {
  runTable('in', [['membership is checked elsewhere', 5, { key: 5 }, false]]);
  runTable('flag_evaluates_to', [['dependencies are checked elsewhere', true, { key: true }, false]]);
  runTable('unknown_operator', [['an unknown operator never matches', 'value', { key: 'value' }, false]]);
});

test('FLAG_OPERATORS lists every operator PostHog accepts in flags', () => {
  expect<string[]>([...FLAG_OPERATORS].sort()).toEqual(
    [
      'exact',
      'flag_evaluates_to',
      'gt',
      'gte',
      'icontains',
      'icontains_multi',
      'in',
      'is_date_after',
      'is_date_before',
      'is_date_exact',
      'is_not',
      'is_not_set',
      'is_set',
      'lt',
      'lte',
      'not_icontains',
      'not_icontains_multi',
      'not_in',
      'not_regex',
      'regex',
      'semver_caret',
      'semver_eq',
      'semver_gt',
      'semver_gte',
      'semver_lt',
      'semver_lte',
      'semver_neq',
      'semver_tilde',
      'semver_wildcard',
    ].sort(),
  );
});
