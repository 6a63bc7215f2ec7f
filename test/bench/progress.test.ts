import { expect, test } from 'bun:test';
import { formatBar, formatDuration, formatPlain, startProgress, type ProgressSink } from '../../bench/_progress';

const state = { label: 'loading 1,000,000 events', done: 340_000, total: 1_000_000, unit: 'events', elapsedS: 11 };

test('a progress line: percent, count, rate, elapsed and ETA', () => {
  expect(formatPlain(state)).toBe('loading 1,000,000 events: 34%, 340,000/1,000,000 events, 30,909 events/s, elapsed 11 s, ETA 21 s');
  expect(formatBar(state)).toBe('loading 1,000,000 events [########................] 34% 340,000/1,000,000 events  30,909 events/s  elapsed 11 s  ETA 21 s');
  expect(formatPlain({ ...state, done: 1_000_000, elapsedS: 32 })).toBe('loading 1,000,000 events: 100%, 1,000,000/1,000,000 events, 31,250 events/s, elapsed 32 s, ETA done');
  expect(formatPlain({ ...state, done: 0, elapsedS: 0 })).toBe('loading 1,000,000 events: 0%, 0/1,000,000 events, 0 events/s, elapsed 0 s, ETA ?');
});

test.each([
  [0.4, '0 s'],
  [59.4, '59 s'],
  [125, '2 min 05 s'],
  [7260, '2 h 01 min'],
])('formatDuration(%d) = %s', (s, text) => expect(formatDuration(s)).toBe(text));

function fakeSink(tty: boolean) {
  let now = 0;
  const out: string[] = [];
  const sink: ProgressSink = { tty, write: (t) => void out.push(t), now: () => now };
  return { sink, out, advance: (ms: number) => (now += ms) };
}

test('not a terminal: a plain line every 5 s and one at the end', () => {
  const { sink, out, advance } = fakeSink(false);
  const p = startProgress('round 1/3', 100, 'requests', { sink });
  for (let i = 1; i <= 12; i++) {
    advance(1000);
    p.update(i * 8);
  }
  p.finish();
  p.finish();
  expect(out).toEqual([
    '   round 1/3: 40%, 40/100 requests, 8 requests/s, elapsed 5 s, ETA 8 s\n',
    '   round 1/3: 80%, 80/100 requests, 8 requests/s, elapsed 10 s, ETA 3 s\n',
    '   round 1/3: 96%, 96/100 requests, 8 requests/s, elapsed 12 s, ETA 1 s\n',
  ]);
});

test('a terminal: one line redrawn in place (at most 10 times a second), a newline at the end', () => {
  const { sink, out, advance } = fakeSink(true);
  const p = startProgress('export', 10, 'rows', { sink, indent: '' });
  advance(50);
  p.update(1); // too soon after the start: not drawn
  advance(950);
  p.update(5);
  advance(50);
  p.update(9); // too soon after the last drawing
  advance(1000);
  p.finish(9); // the size was an estimate: 9, not 10
  expect(out).toEqual([
    '\r\x1b[Kexport [############............] 50% 5/10 rows  5 rows/s  elapsed 1 s  ETA 1 s',
    '\r\x1b[Kexport [########################] 100% 9/9 rows  4 rows/s  elapsed 2 s  ETA done',
    '\n',
  ]);
});
