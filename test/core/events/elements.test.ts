import { describe, expect, test } from 'bun:test';
import { MAX_ELEMENTS_CHAIN_LENGTH, parseElementsChain, splitChain, type ElementObject } from '../../../src/core/events/elements';
import { elementsChainFrom } from '../../../src/core/ingest/elements-chain';

const el = (order: number, fields: Partial<ElementObject>): ElementObject => ({
  event: null,
  text: null,
  tag_name: null,
  attr_class: null,
  href: null,
  attr_id: null,
  nth_child: null,
  nth_of_type: null,
  attributes: {},
  order,
  ...fields,
});

describe('parseElementsChain', () => {
  test.each([
    ['empty', '', []],
    ['null', null, []],
    [
      'a clicked link and its parents',
      'a.btn.btn-primary:attr__class="btn btn-primary"attr__href="/signup"href="/signup"nth-child="2"nth-of-type="1"text="Sign up";div.hero:nth-child="1"nth-of-type="1";body:nth-child="2"nth-of-type="1"',
      [
        el(0, {
          tag_name: 'a', attr_class: ['btn', 'btn-primary'], href: '/signup', nth_child: 2, nth_of_type: 1, text: 'Sign up',
          attributes: { attr__class: 'btn btn-primary', attr__href: '/signup' },
        }),
        el(1, { tag_name: 'div', attr_class: ['hero'], nth_child: 1, nth_of_type: 1 }),
        el(2, { tag_name: 'body', nth_child: 2, nth_of_type: 1 }),
      ],
    ],
    ['attr_id', 'button:attr_id="go"attr__id="go"nth-child="0"nth-of-type="0"', [el(0, { tag_name: 'button', attr_id: 'go', nth_child: 0, nth_of_type: 0, attributes: { attr__id: 'go' } })]],
    ['a ; and spaces inside quotes stay in the value', 'span:text="a; b c"', [el(0, { tag_name: 'span', text: 'a; b c' })]],
    ['escaped quotes stay escaped (as PostHog)', 'span:text="say \\"hi\\""', [el(0, { tag_name: 'span', text: 'say \\"hi\\"' })]],
    ['a class containing a colon', 'div.md:flex.x:nth-child="1"', [el(0, { tag_name: 'div', attr_class: ['md:flex', 'x'], nth_child: 1 })]],
    ['no attributes', 'svg.icon', [el(0, { tag_name: 'svg', attr_class: ['icon'] })]],
    ['only attributes', ':text="x"', [el(0, { text: 'x' })]],
    ['empty classes dropped', 'a..b.:nth-child="1"', [el(0, { tag_name: 'a', attr_class: ['b'], nth_child: 1 })]],
    ['whitespace outside quotes separates elements', 'a b', [el(0, { tag_name: 'a' }), el(1, { tag_name: 'b' })]],
    ['empty value swallows the next pair (PostHog quirk)', 'a:x=""y="z"', [el(0, { tag_name: 'a', attributes: { x: '"y=' } })]],
    ['non-numeric nth-child is null', 'a:nth-child="x"nth-of-type="-3"', [el(0, { tag_name: 'a', nth_of_type: -3 })]],
    ['an unterminated quote is skipped (as the regex does)', 'a:text="oops;b', [el(0, { tag_name: 'a' }), el(1, { tag_name: 'oops' }), el(2, { tag_name: 'b' })]],
  ] as const)('%s', (_name, chain, expected) => {
    expect(parseElementsChain(chain as string | null)).toEqual(expected as unknown as ElementObject[]);
  });

  test('round-trips what ingestion writes from $elements', () => {
    const chain = elementsChainFrom({
      $elements: [
        { tag_name: 'a', $el_text: 'Buy "now"', attr__class: 'cta big', attr__href: '/buy', nth_child: 3, nth_of_type: 2 },
        { tag_name: 'li', nth_child: 1, nth_of_type: 1, attr__id: 'item' },
      ],
    });
    expect(parseElementsChain(chain)).toEqual([
      el(0, { tag_name: 'a', attr_class: ['big', 'cta'], text: 'Buy \\"now\\"', href: '/buy', nth_child: 3, nth_of_type: 2, attributes: { attr__class: 'cta big', attr__href: '/buy' } }),
      el(1, { tag_name: 'li', attr_id: 'item', nth_child: 1, nth_of_type: 1, attributes: { attr__id: 'item' } }),
    ]);
  });

  test('an over-long chain is cut at its last separator', () => {
    const one = 'div:nth-child="1"nth-of-type="1"';
    const chain = Array.from({ length: 1000 }, () => one).join(';');
    expect(chain.length).toBeGreaterThan(MAX_ELEMENTS_CHAIN_LENGTH);
    const elements = parseElementsChain(chain);
    expect(elements.length).toBe(Math.floor((MAX_ELEMENTS_CHAIN_LENGTH + 1) / (one.length + 1)));
    expect(elements.at(-1)).toEqual(el(elements.length - 1, { tag_name: 'div', nth_child: 1, nth_of_type: 1 }));
  });

  test('hostile input stays linear', () => {
    const inputs = ['\\"'.repeat(8000), '"'.repeat(16000), ':'.repeat(16000), 'a:' + '="'.repeat(8000), 'a:k="' + '\\'.repeat(16000)];
    const started = performance.now();
    for (const input of inputs) parseElementsChain(input);
    expect(performance.now() - started).toBeLessThan(500);
  });
});

describe('splitChain', () => {
  test('an unterminated quote closes at its last escaped quote, as the regex backtracks', () => {
    expect(splitChain('a:t="x\\"y;b')).toEqual(['a:t="x\\"y', 'b']);
    expect(splitChain('a:text="oops;b')).toEqual(['a:text=', 'oops', 'b']);
  });
});
