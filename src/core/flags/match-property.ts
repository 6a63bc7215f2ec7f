import { parseFilterDate, parsePropertyDate } from './property-dates';
import { asciiLowercase, isTruthy, isTruthyOrFalsy, parseNumber, toStringRepresentation } from './property-values';
import {
  parseCaretRequirement,
  compareVersions,
  parseVersion,
  satisfiesRequirement,
  parseTildeRequirement,
  parseWildcardRequirement,
} from './semver';
import type { PropertyFilter } from './types';

/** The operators PostHog accepts in flag filters (FEATURE_FLAG_SUPPORTED_OPERATORS). */
export const FLAG_OPERATORS = [
  'exact',
  'is_not',
  'icontains',
  'not_icontains',
  'icontains_multi',
  'not_icontains_multi',
  'regex',
  'not_regex',
  'gt',
  'gte',
  'lt',
  'lte',
  'semver_gt',
  'semver_gte',
  'semver_lt',
  'semver_lte',
  'semver_eq',
  'semver_neq',
  'semver_tilde',
  'semver_caret',
  'semver_wildcard',
  'is_set',
  'is_not_set',
  'is_date_exact',
  'is_date_after',
  'is_date_before',
  'in',
  'not_in',
  'flag_evaluates_to',
] as const;

export type FlagOperator = (typeof FLAG_OPERATORS)[number];

/** `actual` is undefined when the property is missing. */
type Matcher = (expected: unknown, actual: unknown, now: Date) => boolean;

/** A missing property does not match the positive operator and does match its negation. */
const pairWithNegation = (positive: Matcher): [Matcher, Matcher] => [
  (expected, actual, now) => actual !== undefined && positive(expected, actual, now),
  (expected, actual, now) => actual === undefined || !positive(expected, actual, now),
];

/** Boolean-like filter values compare by truthiness, so "True" matches true; lists are any-of. */
const equalsExactly: Matcher = (expected, actual) => {
  if (isTruthyOrFalsy(expected)) return isTruthy(expected) === isTruthy(actual);
  const target = toStringRepresentation(actual).toLowerCase();
  const candidates = Array.isArray(expected) ? expected : [expected];
  return candidates.some((candidate) => toStringRepresentation(candidate).toLowerCase() === target);
};

const containsText: Matcher = (expected, actual) =>
  asciiLowercase(toStringRepresentation(actual)).includes(asciiLowercase(toStringRepresentation(expected)));

const containsAnyText: Matcher = (expected, actual, now) =>
  (Array.isArray(expected) ? expected : [expected]).some((candidate) => containsText(candidate, actual, now));

const REGEX_CACHE_LIMIT = 1000;
const regexCache = new Map<string, RegExp | null>();

/**
 * Inline flags such as `(?i)` are common in PostHog regexes but are not JS syntax. Compiled
 * patterns are memoized because the same flag is evaluated on every request.
 */
const compileRegex = (pattern: string): RegExp | null => {
  const cached = regexCache.get(pattern);
  if (cached !== undefined) return cached;
  const inline = /^\(\?([ims]+)\)/.exec(pattern);
  let regex: RegExp | null;
  try {
    regex = inline ? new RegExp(pattern.slice(inline[0].length), inline[1]) : new RegExp(pattern);
  } catch {
    regex = null;
  }
  if (regexCache.size >= REGEX_CACHE_LIMIT) regexCache.clear();
  regexCache.set(pattern, regex);
  return regex;
};

/** An invalid pattern matches nothing, for regex and not_regex alike. */
const matchRegex = (negated: boolean): Matcher => (expected, actual) => {
  if (actual === undefined) return negated;
  const regex = compileRegex(toStringRepresentation(expected));
  if (!regex) return false;
  return regex.test(toStringRepresentation(actual)) !== negated;
};

/** Numbers only, as the flags service compares: either side not numeric means no match. */
const compareNumbers =
  (test: (order: number) => boolean): Matcher =>
  (expected, actual) => {
    const left = actual === undefined ? null : parseNumber(actual);
    const right = parseNumber(expected);
    if (left === null || right === null || Number.isNaN(left) || Number.isNaN(right)) return false;
    return test(left === right ? 0 : left < right ? -1 : 1);
  };

const compareSemver =
  (test: (order: number) => boolean): Matcher =>
  (expected, actual) => {
    const left = actual === undefined ? null : parseVersion(actual);
    const right = parseVersion(expected);
    return left !== null && right !== null && test(compareVersions(left, right));
  };

const matchSemverRange =
  (requirementOf: (raw: unknown) => ReturnType<typeof parseTildeRequirement>): Matcher =>
  (expected, actual) => {
    const version = actual === undefined ? null : parseVersion(actual);
    return version !== null && satisfiesRequirement(version, requirementOf(expected));
  };

const compareDates =
  (test: (person: number, filter: number) => boolean): Matcher =>
  (expected, actual, now) => {
    const person = actual === undefined ? null : parsePropertyDate(actual, now);
    const filter = parseFilterDate(expected, now);
    return person !== null && filter !== null && test(person.getTime(), filter.getTime());
  };

const [exact, isNot] = pairWithNegation(equalsExactly);
const [icontains, notIcontains] = pairWithNegation(containsText);
const [icontainsMulti, notIcontainsMulti] = pairWithNegation(containsAnyText);

const MATCHERS: Record<string, Matcher> = {
  exact,
  is_not: isNot,
  icontains,
  not_icontains: notIcontains,
  icontains_multi: icontainsMulti,
  not_icontains_multi: notIcontainsMulti,
  regex: matchRegex(false),
  not_regex: matchRegex(true),
  gt: compareNumbers((order) => order > 0),
  gte: compareNumbers((order) => order >= 0),
  lt: compareNumbers((order) => order < 0),
  lte: compareNumbers((order) => order <= 0),
  semver_gt: compareSemver((order) => order > 0),
  semver_gte: compareSemver((order) => order >= 0),
  semver_lt: compareSemver((order) => order < 0),
  semver_lte: compareSemver((order) => order <= 0),
  semver_eq: compareSemver((order) => order === 0),
  semver_neq: compareSemver((order) => order !== 0),
  semver_tilde: matchSemverRange(parseTildeRequirement),
  semver_caret: matchSemverRange(parseCaretRequirement),
  semver_wildcard: matchSemverRange(parseWildcardRequirement),
  is_date_before: compareDates((person, filter) => person < filter),
  is_date_after: compareDates((person, filter) => person > filter),
  is_date_exact: compareDates((person, filter) => person === filter),
};

export const hasProperty = (properties: Record<string, unknown>, key: string): boolean =>
  Object.hasOwn(properties, key) && properties[key] !== undefined;

/**
 * Whether one person or group property filter matches, with the flags service's semantics for a
 * server that knows every property: a missing key fails every operator except is_not_set and the
 * negated ones (is_not, not_icontains, not_regex, not_icontains_multi). A filter without a value
 * matches nothing but is_set / is_not_set. Cohort (`in`/`not_in`) and flag-dependency filters are
 * decided elsewhere and never match here.
 */
export const matchProperty = (filter: PropertyFilter, properties: Record<string, unknown>, now: Date): boolean => {
  const operator = filter.operator ?? 'exact';
  const present = hasProperty(properties, filter.key);
  if (operator === 'is_set') return present;
  if (operator === 'is_not_set') return !present;
  if (filter.value === null || filter.value === undefined) return false;
  const matcher = Object.hasOwn(MATCHERS, operator) ? MATCHERS[operator] : undefined;
  return matcher ? matcher(filter.value, present ? properties[filter.key] : undefined, now) : false;
};
