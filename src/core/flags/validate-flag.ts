import { AppError } from '../../errors';
import type { FlagCondition, FlagFilters, FlagVariant, PropertyFilter } from './types';
import { checkPropertyType, normalizeProperty } from './validate-flag-properties';

const FLAG_KEY = /^[a-zA-Z0-9_-]+$/;

const invalidFilters = (detail: string): AppError => new AppError('invalid_input', detail, 'filters');

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** PostHog's flag key rule, with its message. */
export const validateFlagKey = (key: unknown): string => {
  if (key === undefined || key === null || key === '') throw new AppError('required', 'This field is required.', 'key');
  if (typeof key !== 'string' || !FLAG_KEY.test(key)) {
    throw new AppError('invalid_input', 'Only letters, numbers, hyphens (-) & underscores (_) are allowed.', 'key');
  }
  return key;
};

/** Percentages are finite numbers in [0, 100] (DRF's messages); a condition may also use null. */
const checkPercentage = (value: unknown, nullable: boolean): void => {
  if (nullable && (value === null || value === undefined)) return;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw invalidFilters('A valid number is required.');
  if (value < 0) throw invalidFilters('Ensure this value is greater than or equal to 0.');
  if (value > 100) throw invalidFilters('Ensure this value is less than or equal to 100.');
};

const checkAggregation = (value: unknown): number | null => {
  if (value === undefined || value === null) return null;
  if (!Number.isInteger(value)) throw invalidFilters('A valid integer is required.');
  return value as number;
};

/** Python's truthiness: PostHog treats `multivariate: {}` like no multivariate at all. */
const hasMultivariate = (filters: Record<string, unknown>): boolean =>
  isObject(filters.multivariate) && Object.keys(filters.multivariate).length > 0;

const readVariants = (filters: Record<string, unknown>): FlagVariant[] => {
  if (!hasMultivariate(filters)) return [];
  const variants = (filters.multivariate as Record<string, unknown>).variants ?? [];
  if (!Array.isArray(variants)) throw invalidFilters('Invalid variant definitions: variants must be a list.');
  for (const variant of variants) {
    if (!isObject(variant) || typeof variant.key !== 'string' || variant.key === '') {
      throw invalidFilters('Invalid variant definitions: every variant needs a key.');
    }
    checkPercentage(variant.rollout_percentage, false);
  }
  return variants as FlagVariant[];
};

const checkVariantDefinitions = (variants: FlagVariant[]): void => {
  // Summed in order, as PostHog does, so float artefacts are judged identically.
  const sum = variants.reduce((total, variant) => total + variant.rollout_percentage, 0);
  if (variants.length > 0 && sum !== 100) {
    throw invalidFilters('Invalid variant definitions: Variant rollout percentages must sum to 100.');
  }
  const keys = variants.map((variant) => variant.key);
  if (new Set(keys).size !== keys.length) {
    throw invalidFilters('Invalid variant definitions: Variant keys must be unique.');
  }
};

interface CheckedCondition {
  condition: Record<string, unknown>;
  aggregation: number | null;
  properties: PropertyFilter[];
}

const checkConditionShape = (condition: unknown, flagAggregation: number | null): CheckedCondition => {
  if (!isObject(condition)) throw invalidFilters('Filters are not valid (every condition set must be an object)');
  checkPercentage(condition.rollout_percentage, true);
  const own = condition.aggregation_group_type_index;
  const aggregation = own === undefined ? flagAggregation : checkAggregation(own);
  const properties = condition.properties ?? [];
  if (!Array.isArray(properties)) throw invalidFilters('Filters are not valid (properties must be a list)');
  if (!properties.every((property) => isObject(property) && typeof property.key === 'string')) {
    throw invalidFilters('Filters are not valid (every property needs a key)');
  }
  return { condition, aggregation, properties };
};

const normalizeCondition = ({ condition, properties }: CheckedCondition, variantKeys: Set<string>): FlagCondition => {
  if (condition.variant && !variantKeys.has(condition.variant as string)) {
    throw invalidFilters('Filters are not valid (variant override does not exist)');
  }
  return { ...condition, properties: properties.map(normalizeProperty) } as FlagCondition;
};

/** Payload values are stored as JSON text; other JSON values are encoded the way the UI sends them. */
const normalizePayloads = (
  payloads: unknown,
  variantKeys: Set<string>,
  multivariate: boolean,
): Record<string, string> => {
  if (payloads === undefined || payloads === null) return {};
  if (!isObject(payloads)) throw invalidFilters('Payloads must be passed as a dictionary');
  const normalized: Record<string, string> = {};
  for (const [key, value] of Object.entries(payloads)) {
    if (typeof value === 'string') {
      try {
        JSON.parse(value);
      } catch {
        throw invalidFilters('Payload value is not valid JSON');
      }
    }
    normalized[key] = typeof value === 'string' ? value : JSON.stringify(value);
  }
  const keys = Object.keys(normalized);
  if (multivariate && !keys.every((key) => variantKeys.has(key))) {
    throw invalidFilters('Payload keys must match a variant key for multivariate flags');
  }
  if (!multivariate && keys.some((key) => key !== 'true')) {
    throw invalidFilters("Payload keys must be 'true' for boolean flags");
  }
  return normalized;
};

/**
 * The management API's checks on `filters`, in PostHog's order and with its messages (all as
 * `invalid_input` on `filters`). Returns the filters as they should be stored: operator aliases
 * resolved and payloads as JSON text. Cohort existence needs the database and is checked by the
 * caller.
 */
export const validateFlagFilters = (filters: unknown): FlagFilters => {
  if (!isObject(filters)) throw invalidFilters('Filters must be an object.');
  if (!Array.isArray(filters.groups)) throw invalidFilters('Filters are not valid (groups must be a list)');
  const flagAggregation = checkAggregation(filters.aggregation_group_type_index);
  const conditions = filters.groups.map((condition) => checkConditionShape(condition, flagAggregation));
  const variants = readVariants(filters);
  for (const { aggregation, properties } of conditions) {
    for (const property of properties) checkPropertyType(property, aggregation);
  }
  checkVariantDefinitions(variants);
  const variantKeys = new Set(variants.map((variant) => variant.key));
  const groups = conditions.map((checked) => normalizeCondition(checked, variantKeys));
  const payloads = normalizePayloads(filters.payloads, variantKeys, hasMultivariate(filters));
  return { ...filters, groups, payloads } as FlagFilters;
};
