/**
 * The `elements_chain` string of an autocapture event. posthog-js sends it ready-made in
 * `$elements_chain`; older clients send `$elements`, a list of element objects, which PostHog's
 * ingestion turns into the same string (plugin-server `elements-chain.ts`). The format, per
 * element: `tag.class1.class2:key="value"key="value"` with classes and keys sorted, quotes escaped,
 * elements joined by `;`. Readers of the chain (the events API, action matching) depend on it
 * being byte-identical to PostHog's.
 */

type ElementInput = Record<string, unknown>;

interface Element {
  tagName?: string;
  classes?: string[];
  attributes: Record<string, unknown>;
}

export function elementsChainFrom(properties: Record<string, unknown>): string {
  const chain = properties.$elements_chain;
  if (typeof chain === 'string' && chain !== '') return chain;
  const elements = properties.$elements;
  if (!Array.isArray(elements) || elements.length === 0) return '';
  return elements
    .filter((el): el is ElementInput => typeof el === 'object' && el !== null && !Array.isArray(el))
    .map(readElement)
    .map(formatElement)
    .join(';');
}

function readElement(el: ElementInput): Element {
  const text = typeof el.$el_text === 'string' ? el.$el_text.slice(0, 400) : undefined;
  const href = typeof el.attr__href === 'string' ? el.attr__href.slice(0, 2048) : undefined;
  const attributes: Record<string, unknown> = {
    ...(text ? { text } : {}),
    'nth-child': el.nth_child ?? 0,
    'nth-of-type': el.nth_of_type ?? 0,
    ...(href ? { href } : {}),
    ...(el.attr__id ? { attr_id: el.attr__id } : {}),
    ...Object.fromEntries(Object.entries(el).filter(([key]) => key.startsWith('attr__'))),
  };
  return {
    tagName: typeof el.tag_name === 'string' ? el.tag_name : undefined,
    classes: readClasses(el.attr__class),
    attributes,
  };
}

function readClasses(value: unknown): string[] | undefined {
  if (Array.isArray(value)) return value.map(String);
  if (typeof value === 'string' && value !== '') return value.split(' ');
  return undefined;
}

const escapeQuotes = (text: string) => text.replace(/"/g, '\\"');

function formatElement(el: Element): string {
  let out = el.tagName ?? '';
  for (const cls of [...(el.classes ?? [])].sort()) out += `.${cls.replace(/"/g, '')}`;
  const attributes = Object.entries(el.attributes)
    .sort(([a], [b]) => a.localeCompare(b, 'en'))
    .map(([key, value]) => `${escapeQuotes(key)}="${escapeQuotes(String(value))}"`)
    .join('');
  return `${out}:${attributes}`;
}
