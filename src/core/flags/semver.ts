import { toStringRepresentation } from './property-values';

/**
 * Semantic versions for the semver_* operators, read like the flags service reads them: a leading
 * `v` is dropped, leading zeros are stripped and missing minor/patch parts are padded ("3.08" is
 * 3.8.0), then the text must be strict semver. Anything that does not parse never matches.
 */
export interface Version {
  major: number;
  minor: number;
  patch: number;
  pre: string[];
  build: string;
}

const NUMERIC = /^\d+$/;
const IDENTIFIER = /^[0-9A-Za-z-]+$/;
const WILDCARD = /^[*xX]$/;

const stripLeadingZeros = (part: string): string => (NUMERIC.test(part) ? part.replace(/^0+(?=\d)/, '') : part);

const normalizeVersionText = (raw: unknown): string => {
  const text = toStringRepresentation(raw);
  return (text.startsWith('v') ? text.slice(1) : text).trim();
};

const splitVersionSuffix = (text: string): [core: string, pre: string | null, build: string | null] => {
  const plus = text.indexOf('+');
  const build = plus >= 0 ? text.slice(plus + 1) : null;
  const beforeBuild = plus >= 0 ? text.slice(0, plus) : text;
  const dash = beforeBuild.indexOf('-');
  return dash >= 0 ? [beforeBuild.slice(0, dash), beforeBuild.slice(dash + 1), build] : [beforeBuild, null, build];
};

const parseIdentifiers = (text: string, numericWithoutZeros: boolean): string[] | null => {
  const parts = text.split('.');
  const ok = parts.every(
    (part) => IDENTIFIER.test(part) && !(numericWithoutZeros && NUMERIC.test(part) && /^0\d/.test(part)),
  );
  return ok ? parts : null;
};

export const parseVersion = (raw: unknown): Version | null => {
  const [core, pre, build] = splitVersionSuffix(normalizeVersionText(raw));
  const parts = core.split('.').map(stripLeadingZeros);
  while (parts.length < 3) parts.push('0');
  if (parts.length > 3 || !parts.every((part) => NUMERIC.test(part))) return null;
  const preIds = pre === null ? [] : parseIdentifiers(pre, true);
  if (preIds === null || (build !== null && parseIdentifiers(build, false) === null)) return null;
  const [major, minor, patch] = parts.map(Number);
  return { major, minor, patch, pre: preIds, build: build ?? '' };
};

const compareIdentifiers = (a: string, b: string): number => {
  const aNumeric = NUMERIC.test(a);
  const bNumeric = NUMERIC.test(b);
  if (aNumeric && bNumeric) return Math.sign(Number(a) - Number(b));
  if (aNumeric !== bNumeric) return aNumeric ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
};

const comparePre = (a: string[], b: string[]): number => {
  if (a.length === 0 || b.length === 0) return Math.sign(b.length - a.length);
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    const order = compareIdentifiers(a[i], b[i]);
    if (order !== 0) return order;
  }
  return Math.sign(a.length - b.length);
};

/** Semver precedence; build metadata only breaks ties, as in Rust's `semver::Version` ordering. */
export const compareVersions = (a: Version, b: Version): number =>
  Math.sign(a.major - b.major) ||
  Math.sign(a.minor - b.minor) ||
  Math.sign(a.patch - b.patch) ||
  comparePre(a.pre, b.pre) ||
  (a.build < b.build ? -1 : a.build > b.build ? 1 : 0);

/** A requirement: a lower bound plus the leading parts a version must share with it. */
interface Requirement {
  lower: Version;
  sameParts: 0 | 1 | 2 | 3;
}

/** Pre-releases only satisfy a requirement whose own bound is a pre-release of the same x.y.z. */
const satisfiesBounds = (version: Version, { lower, sameParts }: Requirement): boolean => {
  const keys = ['major', 'minor', 'patch'] as const;
  if (!keys.slice(0, sameParts).every((key) => version[key] === lower[key])) return false;
  if (compareVersions({ ...version, build: '' }, { ...lower, build: '' }) < 0) return false;
  if (version.pre.length === 0) return true;
  return lower.pre.length > 0 && keys.every((key) => version[key] === lower[key]);
};

const countCaretParts = (version: Version, givenParts: number): 1 | 2 | 3 => {
  if (version.major > 0 || givenParts === 1) return 1;
  if (version.minor > 0 || givenParts === 2) return 2;
  return 3;
};

export const parseTildeRequirement = (raw: unknown): Requirement | null => {
  const lower = parseVersion(raw);
  return lower && { lower, sameParts: 2 };
};

export const parseCaretRequirement = (raw: unknown): Requirement | null => {
  const lower = parseVersion(raw);
  return lower && { lower, sameParts: countCaretParts(lower, 3) };
};

/** "1.2.*", "1.*", "*" pin the parts before the wildcard; a pattern without one is a caret range. */
export const parseWildcardRequirement = (raw: unknown): Requirement | null => {
  const text = normalizeVersionText(raw);
  const parts = text.split('.').map(stripLeadingZeros);
  const firstWildcard = parts.findIndex((part) => WILDCARD.test(part));
  if (firstWildcard === -1) {
    const lower = parseVersion(raw);
    return lower && { lower, sameParts: countCaretParts(lower, splitVersionSuffix(text)[0].split('.').length) };
  }
  const fixed = parts.slice(0, firstWildcard);
  const rest = parts.slice(firstWildcard);
  if (parts.length > 3 || !rest.every((part) => WILDCARD.test(part))) return null;
  if (!fixed.every((part) => NUMERIC.test(part))) return null;
  const [major = 0, minor = 0] = fixed.map(Number);
  const lower: Version = { major, minor, patch: 0, pre: [], build: '' };
  return { lower, sameParts: fixed.length as 0 | 1 | 2 };
};

export const satisfiesRequirement = (version: Version, requirement: Requirement | null): boolean =>
  requirement !== null && satisfiesBounds(version, requirement);
