import type { BenchOptions } from './types';

/**
 * The command line of `npm run bench -- …`:
 *   [name ...] [--quick] [--events 10M] [--rounds N] [--seconds S] [--target URL [--allow-remote]]
 *   compare A.json B.json
 * No name runs the headline; `all` runs every bench.
 */

export type Command = { kind: 'compare'; a: string; b: string } | { kind: 'run'; names: string[]; quick: boolean; options: BenchOptions };

/** "10M", "200k", "1e6", "1,000,000" → a count; NaN when it is not one. */
export function parseCount(text: string): number {
  const m = /^([\d.,_]+(?:e\d+)?)\s*([kKmM]?)$/.exec(text.trim());
  if (!m) return Number.NaN;
  const scale = m[2] ? (m[2].toLowerCase() === 'k' ? 1e3 : 1e6) : 1;
  const n = Math.round(Number(m[1].replace(/[,_]/g, '')) * scale * 1e6) / 1e6;
  return Number.isInteger(n) && n > 0 ? n : Number.NaN;
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\]|::1)$/;
export const isLoopbackHost = (hostname: string) => LOOPBACK.test(hostname);

export function parseArgs(argv: readonly string[]): Command {
  if (argv[0] === 'compare') {
    const files = argv.slice(1).filter((a) => !a.startsWith('--'));
    if (files.length !== 2) throw new Error('usage: npm run bench -- compare A.json B.json');
    return { kind: 'compare', a: files[0], b: files[1] };
  }
  const quick = argv.includes('--quick');
  const names: string[] = [];
  const values: Record<string, string> = {};
  let allowRemote = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--quick') continue;
    if (arg === '--allow-remote') allowRemote = true;
    else if (/^--(events|rounds|seconds|target)(=|$)/.test(arg)) {
      const [flag, inline] = arg.slice(2).split(/=(.*)/s);
      const value = inline ?? argv[++i];
      if (value === undefined || value.startsWith('--')) throw new Error(`--${flag} needs a value`);
      values[flag] = value;
    } else if (arg.startsWith('--')) throw new Error(`unknown option ${arg}`);
    else names.push(arg);
  }
  const count = (flag: string, fallback: number) => {
    if (values[flag] === undefined) return fallback;
    const n = parseCount(values[flag]);
    if (Number.isNaN(n)) throw new Error(`--${flag} takes a positive whole number (e.g. 200k, 10M), not "${values[flag]}"`);
    return n;
  };
  let target: string | null = null;
  if (values.target !== undefined) {
    let url: URL;
    try {
      url = new URL(values.target);
    } catch {
      throw new Error(`--target takes a URL such as http://127.0.0.1:8000, not "${values.target}"`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('--target must be an http(s) URL');
    if (!isLoopbackHost(url.hostname) && !allowRemote) {
      throw new Error(`--target ${url.host} is not this machine: benchmarks load a server hard, so point them only at servers you own, and say so with --allow-remote`);
    }
    target = url.origin;
  }
  return {
    kind: 'run',
    names,
    quick,
    options: {
      events: count('events', quick ? 100_000 : 1_000_000),
      rounds: count('rounds', quick ? 3 : 5),
      seconds: count('seconds', quick ? 3 : 5),
      target,
      allowRemote,
    },
  };
}
