/**
 * Syntax check for RE2, the engine behind DuckDB's regexp_matches. A pattern DuckDB rejects fails
 * the whole query at run time, so patterns are checked here and refused with a 400 instead.
 * JavaScript's RegExp cannot stand in: it accepts lookarounds and backreferences that RE2 refuses,
 * and refuses RE2's `(?i)` flags and `(?P<name>…)` groups.
 *
 * Returns null for a valid pattern, otherwise the reason.
 */
export function checkRe2Syntax(pattern: string): string | null {
  try {
    new Re2Checker(pattern).run();
    return null;
  } catch (error) {
    if (error instanceof Re2SyntaxError) return error.message;
    throw error;
  }
}

class Re2SyntaxError extends Error {}

const MAX_REPEAT = 1000;
const POSIX_CLASSES = new Set([
  'alnum', 'alpha', 'ascii', 'blank', 'cntrl', 'digit', 'graph', 'lower', 'print', 'punct', 'space', 'upper', 'word', 'xdigit',
]);
const UNICODE_CATEGORIES = new Set([
  'Any', 'C', 'Cc', 'Cf', 'Co', 'Cs', 'L', 'Ll', 'Lm', 'Lo', 'Lt', 'Lu', 'M', 'Mc', 'Me', 'Mn', 'N', 'Nd', 'Nl', 'No',
  'P', 'Pc', 'Pd', 'Pe', 'Pf', 'Pi', 'Po', 'Ps', 'S', 'Sc', 'Sk', 'Sm', 'So', 'Z', 'Zl', 'Zp', 'Zs',
]);
/**
 * The scripts people filter on. RE2 knows ~160; an unlisted one is refused here (a 400) rather
 * than risk a name RE2 does not know failing the query at run time.
 */
const UNICODE_SCRIPTS = new Set([
  'Arabic', 'Armenian', 'Bengali', 'Common', 'Cyrillic', 'Devanagari', 'Ethiopic', 'Georgian', 'Greek', 'Gujarati',
  'Gurmukhi', 'Han', 'Hangul', 'Hebrew', 'Hiragana', 'Inherited', 'Kannada', 'Katakana', 'Khmer', 'Lao', 'Latin',
  'Malayalam', 'Myanmar', 'Sinhala', 'Tamil', 'Telugu', 'Thai', 'Tibetan',
]);

interface Frame {
  /** Whether the current branch has an atom a repetition operator may follow. */
  hasAtom: boolean;
  /** Largest product of counted repetitions inside this group (RE2 caps it at 1000). */
  repeatProduct: number;
  lastAtomProduct: number;
}

class Re2Checker {
  private i = 0;
  private readonly stack: Frame[] = [{ hasAtom: false, repeatProduct: 1, lastAtomProduct: 1 }];
  /** Set right after a repetition operator: RE2 refuses stacked ones such as `a**` or `a{2}{3}`. */
  private lastWasRepeat = false;

  constructor(private readonly p: string) {}

  run(): void {
    while (this.i < this.p.length) this.step();
    if (this.stack.length > 1) throw new Re2SyntaxError('missing )');
  }

  private get top(): Frame {
    return this.stack[this.stack.length - 1] as Frame;
  }

  private step(): void {
    const ch = this.p[this.i] as string;
    if (ch === '*' || ch === '+' || ch === '?') return this.repeat(1, ch);
    if (ch === '{') {
      const counted = /^\{(\d+)(,(\d*))?\}/.exec(this.p.slice(this.i));
      if (counted) return this.countedRepeat(counted);
    }
    this.lastWasRepeat = false;
    if (ch === '(') return this.openGroup();
    if (ch === ')') return this.closeGroup();
    if (ch === '|') {
      this.i++;
      this.top.hasAtom = false;
      return;
    }
    if (ch === '[') this.charClass();
    else if (ch === '\\') this.escape(false);
    else this.i++;
    this.atom(1);
  }

  private atom(product: number): void {
    this.top.hasAtom = true;
    this.top.lastAtomProduct = product;
    this.top.repeatProduct = Math.max(this.top.repeatProduct, product);
  }

  private repeat(length: number, op: string): void {
    if (this.lastWasRepeat) throw new Re2SyntaxError(`bad repetition operator: ${op}`);
    if (!this.top.hasAtom) throw new Re2SyntaxError(`missing argument to repetition operator: ${op}`);
    this.i += length;
    if (this.p[this.i] === '?') this.i++;
    this.lastWasRepeat = true;
  }

  private countedRepeat(match: RegExpExecArray): void {
    const min = Number(match[1]);
    const max = match[2] === undefined ? min : match[3] === '' ? -1 : Number(match[3]);
    if (min > MAX_REPEAT || max > MAX_REPEAT || (max !== -1 && max < min)) {
      throw new Re2SyntaxError(`invalid repetition size: ${match[0]}`);
    }
    const product = this.top.lastAtomProduct * Math.max(1, max === -1 ? min : max);
    if (product > MAX_REPEAT) throw new Re2SyntaxError(`invalid repetition size: ${match[0]}`);
    this.repeat(match[0].length, match[0]);
    this.top.lastAtomProduct = product;
    this.top.repeatProduct = Math.max(this.top.repeatProduct, product);
  }

  private openGroup(): void {
    this.i++;
    if (this.p[this.i] === '?' && !this.groupFlags()) return;
    if (this.stack.length > 1000) throw new Re2SyntaxError('nesting too deep');
    this.stack.push({ hasAtom: false, repeatProduct: 1, lastAtomProduct: 1 });
  }

  /**
   * After `(?`: a named group `(?P<name>`, or flags, either alone `(?i)` (opens no group, returns
   * false) or scoped `(?i-s:`. Lookarounds, `(?<name>` and the rest are refused, as RE2 does.
   */
  private groupFlags(): boolean {
    const rest = this.p.slice(this.i);
    const named = /^\?P<([A-Za-z0-9_]+)>/.exec(rest);
    if (named) {
      this.i += named[0].length;
      return true;
    }
    const flags = /^\?([imsU]*)(?:-([imsU]*))?([:)])/.exec(rest);
    if (!flags || flags[2] === '') {
      throw new Re2SyntaxError(`invalid perl operator: (${rest.slice(0, 2)}`);
    }
    this.i += flags[0].length;
    return flags[3] === ':';
  }

  private closeGroup(): void {
    if (this.stack.length === 1) throw new Re2SyntaxError('unexpected )');
    this.i++;
    const inner = this.stack.pop() as Frame;
    this.atom(inner.repeatProduct);
  }

  /** `[...]`, with negation, a leading literal `]`, ranges, POSIX and Perl/Unicode classes. */
  private charClass(): void {
    this.i++;
    if (this.p[this.i] === '^') this.i++;
    let first = true;
    for (;;) {
      if (this.i >= this.p.length) throw new Re2SyntaxError('missing ]');
      const ch = this.p[this.i] as string;
      if (ch === ']' && !first) {
        this.i++;
        return;
      }
      first = false;
      const posix = /^\[:(\^?)([a-z]+):\]/.exec(this.p.slice(this.i));
      if (posix) {
        if (!POSIX_CLASSES.has(posix[2] as string)) throw new Re2SyntaxError(`invalid character class range: ${posix[0]}`);
        this.i += posix[0].length;
        continue;
      }
      const low = this.classChar();
      if (this.p[this.i] === '-' && this.p[this.i + 1] !== ']' && this.i + 1 < this.p.length) {
        this.i++;
        const high = this.classChar();
        if (low === null || high === null) throw new Re2SyntaxError('invalid character class range');
        if (high < low) throw new Re2SyntaxError('invalid character class range');
      }
    }
  }

  /** One class member: its code point, or null for a class escape such as `\d`. */
  private classChar(): number | null {
    if (this.p[this.i] === '\\') return this.escape(true);
    const code = this.p.codePointAt(this.i) as number;
    this.i += code > 0xffff ? 2 : 1;
    return code;
  }

  /** A backslash escape; returns the literal code point, or null for classes and assertions. */
  private escape(inClass: boolean): number | null {
    const c = this.p[this.i + 1];
    if (c === undefined) throw new Re2SyntaxError('trailing \\');
    this.i += 2;
    if (/[dDsSwW]/.test(c)) return null;
    if (c === 'p' || c === 'P') return this.unicodeClass();
    if (!inClass && /[AzbBC]/.test(c)) return null;
    if (!inClass && c === 'Q') {
      const end = this.p.indexOf('\\E', this.i);
      this.i = end === -1 ? this.p.length : end + 2;
      return null;
    }
    const simple: Record<string, number> = { a: 7, f: 12, n: 10, r: 13, t: 9, v: 11 };
    if (simple[c] !== undefined) return simple[c] as number;
    if (c === 'x') return this.hexEscape();
    if (/[0-7]/.test(c)) return this.octalEscape(c);
    if (c.charCodeAt(0) < 0x80 && !/[A-Za-z0-9]/.test(c)) return c.charCodeAt(0);
    throw new Re2SyntaxError(`invalid escape sequence: \\${c}`);
  }

  private unicodeClass(): null {
    const braced = /^\{\^?([A-Za-z_]+)\}/.exec(this.p.slice(this.i));
    const name = braced ? braced[1] : this.p[this.i];
    if (name === undefined || !(UNICODE_CATEGORIES.has(name) || (braced && UNICODE_SCRIPTS.has(name)))) {
      throw new Re2SyntaxError(`invalid character class range: \\p${braced ? braced[0] : (name ?? '')}`);
    }
    this.i += braced ? braced[0].length : 1;
    return null;
  }

  private hexEscape(): number {
    const match = /^(?:\{([0-9A-Fa-f]{1,6})\}|([0-9A-Fa-f]{2}))/.exec(this.p.slice(this.i));
    const code = match ? parseInt((match[1] ?? match[2]) as string, 16) : NaN;
    if (!match || code > 0x10ffff) throw new Re2SyntaxError('invalid escape sequence: \\x');
    this.i += match[0].length;
    return code;
  }

  /** `\0`–`\7` start an octal escape, but a lone `\1`–`\7` is a backreference, which RE2 lacks. */
  private octalEscape(first: string): number {
    const more = /^[0-7]{0,2}/.exec(this.p.slice(this.i))?.[0] ?? '';
    if (first !== '0' && more === '') throw new Re2SyntaxError(`invalid escape sequence: \\${first}`);
    this.i += more.length;
    return parseInt(first + more, 8);
  }
}
