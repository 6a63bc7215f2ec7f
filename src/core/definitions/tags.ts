/** PostHog's tags of event and property definitions: trimmed, lower-cased, without blanks or repeats. */
export const tagify = (tags: readonly string[]): string[] => [...new Set(tags.map((tag) => tag.trim().toLowerCase()).filter(Boolean))];
