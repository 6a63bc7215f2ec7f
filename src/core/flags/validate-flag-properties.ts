import { AppError } from '../../errors';
import { FLAG_OPERATORS } from './match-property';
import { parseFilterDate } from './property-dates';
import { parseVersion, parseWildcardRequirement } from './semver';
import type { PropertyFilter } from './types';

const invalidFilters = (detail: string): AppError => new AppError('invalid_input', detail, 'filters');

/** PostHog rewrites these before validating, so stored flags only ever hold the canonical name. */
const OPERATOR_ALIASES: Record<string, string> = { min: 'gte', max: 'lte' };
/** Operators PostHog knows but does not evaluate in flags. */
const UNSUPPORTED_OPERATORS = new Set(['between', 'not_between']);
const STRING_VALUE_OPERATORS = new Set(['regex', 'icontains', 'not_regex', 'not_icontains', 'gte', 'lte', 'gt', 'lt']);
const DATE_OPERATORS = new Set(['is_date_before', 'is_date_after', 'is_date_exact']);
const SEMVER_OPERATORS = new Set<string>(FLAG_OPERATORS.filter((operator) => operator.startsWith('semver_')));
const KNOWN_OPERATORS = new Set<string>(FLAG_OPERATORS);
const VALIDATION_CLOCK = new Date(0);

/** Values appear in PostHog's messages as Python prints them. */
const formatLikePython = (value: unknown): string => {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  return typeof value === 'string' ? value : JSON.stringify(value);
};

/** Which property types a condition may use depends on what it aggregates by. */
export const checkPropertyType = (property: PropertyFilter, aggregation: number | null): void => {
  const type = property.type ?? 'person';
  if (aggregation === null) {
    if (!['person', 'cohort', 'flag'].includes(type)) {
      throw invalidFilters(
        'Filters are not valid (person-aggregated conditions can only use person, cohort, and flag properties)',
      );
    }
    if (type === 'flag' && property.operator !== 'flag_evaluates_to') {
      throw invalidFilters("Flag properties must use the 'flag_evaluates_to' operator");
    }
    return;
  }
  if (type !== 'group') {
    throw invalidFilters('Filters are not valid (group-aggregated conditions can only use group properties)');
  }
  if (property.group_type_index !== aggregation) {
    throw invalidFilters("Filters are not valid (group properties must match the condition set's group type)");
  }
};

const checkOperatorName = (operator: string): void => {
  if (UNSUPPORTED_OPERATORS.has(operator)) throw invalidFilters(`Unsupported operator for feature flags: ${operator}`);
  if (!KNOWN_OPERATORS.has(operator)) throw invalidFilters(`Invalid operator: ${operator}`);
};

const checkSemverValue = (operator: string, value: unknown): void => {
  if (typeof value !== 'string') {
    throw invalidFilters(`Invalid value for operator ${operator}: expected a semver string`);
  }
  const parsed = operator === 'semver_wildcard' ? parseWildcardRequirement(value) : parseVersion(value);
  if (parsed === null) throw invalidFilters(`Invalid semver value for operator ${operator}: ${value}`);
};

/** Value checks per operator, with PostHog's messages. */
const checkOperatorValue = (property: PropertyFilter, operator: string): void => {
  const { value } = property;
  if (DATE_OPERATORS.has(operator) && parseFilterDate(value, VALIDATION_CLOCK) === null) {
    throw invalidFilters(`Invalid date value: ${formatLikePython(value)}`);
  }
  if (STRING_VALUE_OPERATORS.has(operator) && typeof value !== 'string') {
    throw invalidFilters(`Invalid value for operator ${operator}: ${formatLikePython(value)}`);
  }
  if ((operator === 'in' || operator === 'not_in') && property.type !== 'cohort') {
    throw invalidFilters(
      `The '${operator}' operator is only valid for cohort properties, not '${property.type ?? 'person'}' properties.`,
    );
  }
  if (SEMVER_OPERATORS.has(operator)) checkSemverValue(operator, value);
  if ((operator === 'icontains_multi' || operator === 'not_icontains_multi') && !Array.isArray(value)) {
    throw invalidFilters(`${operator} operator requires a list of values`);
  }
};

/** Returns the property with its operator in canonical form. */
export const normalizeProperty = (property: PropertyFilter): PropertyFilter => {
  const raw = property.operator ?? null;
  if (raw === null) return property;
  if (typeof raw !== 'string') throw invalidFilters(`Invalid operator: ${formatLikePython(raw)}`);
  const operator = OPERATOR_ALIASES[raw] ?? raw;
  checkOperatorName(operator);
  checkOperatorValue(property, operator);
  return operator === raw ? property : { ...property, operator };
};
