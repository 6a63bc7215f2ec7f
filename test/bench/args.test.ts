import { describe, expect, test } from 'bun:test';
import { parseArgs, parseCount } from '../../bench/_args';

describe('parseCount', () => {
  test.each([
    ['200k', 200_000],
    ['10M', 10_000_000],
    ['1.5m', 1_500_000],
    ['1e6', 1_000_000],
    ['1,000,000', 1_000_000],
    ['12', 12],
  ])('%s → %d', (text, n) => expect(parseCount(text)).toBe(n));
  test.each(['', 'ten', '-5', '0', '1.5', '2g'])('%p is not a count', (text) => expect(parseCount(text)).toBeNaN());
});

describe('parseArgs', () => {
  const run = (argv: string[]) => parseArgs(argv);
  test('no arguments: the headline with its default sizes, spawning its own server', () => {
    expect(run([])).toEqual({ kind: 'run', names: [], quick: false, options: { events: 1_000_000, rounds: 5, seconds: 5, target: null, allowRemote: false } });
  });
  test('--quick makes everything small; explicit sizes win over it', () => {
    expect(run(['--quick'])).toEqual({ kind: 'run', names: [], quick: true, options: { events: 100_000, rounds: 3, seconds: 3, target: null, allowRemote: false } });
    expect(run(['headline', '--quick', '--events', '200k', '--rounds=2'])).toEqual({
      kind: 'run',
      names: ['headline'],
      quick: true,
      options: { events: 200_000, rounds: 2, seconds: 3, target: null, allowRemote: false },
    });
  });
  test('compare takes two files', () => {
    expect(run(['compare', 'a.json', 'b.json'])).toEqual({ kind: 'compare', a: 'a.json', b: 'b.json' });
    expect(() => run(['compare', 'a.json'])).toThrow('usage: npm run bench -- compare A.json B.json');
  });
  test('--target: loopback as given, another host only with --allow-remote', () => {
    expect(run(['--target', 'http://127.0.0.1:8000/']).kind === 'run' && (run(['--target', 'http://127.0.0.1:8000/']) as any).options.target).toBe('http://127.0.0.1:8000');
    expect((run(['--target=http://localhost:9000']) as any).options.target).toBe('http://localhost:9000');
    expect(() => run(['--target', 'https://analytics.example.com'])).toThrow(
      '--target analytics.example.com is not this machine: benchmarks load a server hard, so point them only at servers you own, and say so with --allow-remote',
    );
    expect((run(['--target', 'https://analytics.example.com', '--allow-remote']) as any).options).toEqual({
      events: 1_000_000,
      rounds: 5,
      seconds: 5,
      target: 'https://analytics.example.com',
      allowRemote: true,
    });
  });
  test.each([
    [['--events', 'lots'], '--events takes a positive whole number (e.g. 200k, 10M), not "lots"'],
    [['--rounds'], '--rounds needs a value'],
    [['--target', 'ftp://x'], '--target must be an http(s) URL'],
    [['--target', 'nope'], '--target takes a URL such as http://127.0.0.1:8000, not "nope"'],
    [['--fast'], 'unknown option --fast'],
  ])('%p is refused: %s', (argv, message) => expect(() => run(argv)).toThrow(message));
});
