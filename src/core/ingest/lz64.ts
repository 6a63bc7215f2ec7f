/**
 * LZString `decompressFromBase64`, with a cap on the output.
 *
 * Why not the `lz-string` package: LZ78-style output grows quadratically with the input (each
 * code can name a dictionary entry one character longer than the last), so a 1 MB body can ask
 * for gigabytes, and the library only returns once it has built all of it. This decoder counts
 * output characters as it goes and stops at `maxChars`. The format is the library's: 6 bits per
 * base64 character read most-significant first, codes assembled least-significant first, a 2-bit
 * first code, 0 = 8-bit literal, 1 = 16-bit literal, 2 = end of stream.
 *
 * Returns `null` for input that is not valid lz64 (an invalid character, a code that names no
 * entry, a stream that ends without its end code): the caller answers 400 as PostHog does.
 * Throws `too large` through `onTooLarge` when the output would pass `maxChars`.
 */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=';
const VALUES = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) VALUES[ALPHABET.charCodeAt(i)] = i;

const LITERAL_8 = 0;
const LITERAL_16 = 1;
const END = 2;

/** Reads like the library: the next character is loaded as soon as the current one is used up. */
class BitReader {
  private value = 0;
  private mask = 0;
  private index = 0;
  invalid = false;

  constructor(private readonly input: string) {
    this.load();
  }

  get exhausted(): boolean {
    return this.index > this.input.length;
  }

  read(bitCount: number): number {
    let result = 0;
    for (let bit = 0; bit < bitCount; bit++) {
      if (this.value & this.mask) result |= 1 << bit;
      this.mask >>= 1;
      if (this.mask === 0) this.load();
    }
    return result >>> 0;
  }

  private load(): void {
    // Past the end the library reads zero bits; a well-formed stream has ended before that.
    if (this.index < this.input.length) {
      const code = this.input.charCodeAt(this.index);
      const value = code < 128 ? VALUES[code] : -1;
      if (value < 0) this.invalid = true;
      this.value = Math.max(value, 0);
    } else {
      this.value = 0;
    }
    this.index++;
    this.mask = 32;
  }
}

export function decompressLz64(input: string, maxChars: number, onTooLarge: () => never): string | null {
  if (input.length === 0) return null;
  const bits = new BitReader(input);
  const dictionary: string[] = ['', '', ''];
  let enlargeIn = 4;
  let codeBits = 3;

  const first = bits.read(2);
  if (first === END) return '';
  if (first !== LITERAL_8 && first !== LITERAL_16) return null;
  let previous = String.fromCharCode(bits.read(first === LITERAL_8 ? 8 : 16));
  dictionary.push(previous);
  const output = [previous];
  let outputChars = previous.length;

  for (;;) {
    if (bits.exhausted || bits.invalid) return null;
    let code = bits.read(codeBits);
    if (code === END) return output.join('');
    if (code === LITERAL_8 || code === LITERAL_16) {
      dictionary.push(String.fromCharCode(bits.read(code === LITERAL_8 ? 8 : 16)));
      code = dictionary.length - 1;
      if (--enlargeIn === 0) enlargeIn = 2 ** codeBits++;
    }
    let entry: string;
    if (code < dictionary.length) entry = dictionary[code];
    else if (code === dictionary.length) entry = previous + previous[0];
    else return null;

    outputChars += entry.length;
    if (outputChars > maxChars) onTooLarge();
    output.push(entry);
    dictionary.push(previous + entry[0]);
    previous = entry;
    if (--enlargeIn === 0) enlargeIn = 2 ** codeBits++;
  }
}
