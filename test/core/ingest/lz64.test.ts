import { describe, expect, test } from 'bun:test';
import * as LZString from 'lz-string';
import { decompressLz64 } from '../../../src/core/ingest/lz64';
import { lz64BombOfA } from './helpers';

const tooLarge = (): never => {
  throw new Error('too large');
};

/** Deterministic text mixing JSON punctuation, ASCII, BMP characters and astral emoji. */
function sampleText(seed: number, length: number): string {
  let state = seed;
  const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const pieces = ['{"event":', '"$pageview"', ',', '}', 'a', 'b', 'é', 'ϥ', '💻', '🤓', ' ', '\\n', '0', '9'];
  let out = '';
  while (out.length < length) out += next() < 0.8 ? pieces[Math.floor(next() * pieces.length)] : String.fromCharCode(32 + Math.floor(next() * 0xd000));
  return out;
}

describe('decompressLz64 reads what LZString.compressToBase64 writes', () => {
  test.each([
    ['one character', 'a'],
    ['a repeated character', 'a'.repeat(10_000)],
    ['JSON with emoji (PostHog test_lz64_with_emoji)', JSON.stringify({ event: '🤓 nerd', properties: { distinct_id: 'ϥ' } })],
    ...Array.from({ length: 40 }, (_, i) => [`mixed text #${i}`, sampleText(i + 1, 1 + i * 97)] as [string, string]),
  ])('%s', (_name, text) => {
    const compressed = LZString.compressToBase64(text);
    expect(decompressLz64(compressed, 1e9, tooLarge)).toEqual(text);
    expect(decompressLz64(compressed.replace(/=+$/, ''), 1e9, tooLarge)).toEqual(text);
  });

  test.each([
    ['empty input', '', null],
    ['an empty stream (end code only)', LZString.compressToBase64(''), ''],
    ['a character outside the alphabet', `${LZString.compressToBase64('{"a":1}').slice(0, 4)}*${LZString.compressToBase64('{"a":1}').slice(5)}`, null],
    ['cut in the middle', LZString.compressToBase64(sampleText(7, 500)).slice(0, 100), null],
  ] as const)('%s', (_name, input, expected) => {
    expect(decompressLz64(input, 1e9, tooLarge)).toEqual(expected);
  });

  test('stops at the cap instead of building the whole output', () => {
    // 1000 codes expand to ~500 k characters; the library would return all of them.
    const bomb = lz64BombOfA(1000);
    expect(LZString.decompressFromBase64(bomb).length).toEqual(501_501);
    expect(decompressLz64(bomb, 600_000, tooLarge)).toEqual('a'.repeat(501_501));
    expect(() => decompressLz64(bomb, 100_000, tooLarge)).toThrow('too large');
  });
});
