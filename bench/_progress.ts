/**
 * Progress of a long step (loading millions of events, a load round): done/total, rate, elapsed
 * and ETA. On a terminal one line redrawn as a bar; otherwise (a CI log, a pipe) a plain line
 * every few seconds and one at the end, so logs stay readable.
 */

export interface ProgressState {
  label: string;
  done: number;
  total: number;
  /** What is counted, e.g. "events" or "requests". */
  unit: string;
  elapsedS: number;
}

const BAR_WIDTH = 24;

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '?';
  if (seconds < 60) return `${Math.round(seconds)} s`;
  const m = Math.floor(seconds / 60);
  const s = Math.round(seconds - m * 60);
  return m < 60 ? `${m} min ${String(s).padStart(2, '0')} s` : `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

/** The figures of one progress line: percent, count, rate, elapsed and ETA (pure, for tests). */
export function progressParts(p: ProgressState) {
  const fraction = p.total > 0 ? Math.min(1, p.done / p.total) : 0;
  const rate = p.elapsedS > 0 ? p.done / p.elapsedS : 0;
  const etaS = rate > 0 ? Math.max(0, (p.total - p.done) / rate) : Number.NaN;
  return {
    percent: `${Math.floor(fraction * 100)}%`,
    count: `${Math.round(p.done).toLocaleString('en-US')}/${Math.round(p.total).toLocaleString('en-US')} ${p.unit}`,
    rate: `${Math.round(rate).toLocaleString('en-US')} ${p.unit}/s`,
    elapsed: formatDuration(p.elapsedS),
    eta: p.done >= p.total ? 'done' : formatDuration(etaS),
    fraction,
  };
}

/** `label [#######.......] 34% 340,000/1,000,000 events  31,200 events/s  elapsed 11 s  ETA 21 s` */
export function formatBar(p: ProgressState): string {
  const x = progressParts(p);
  const filled = Math.round(x.fraction * BAR_WIDTH);
  const bar = '#'.repeat(filled) + '.'.repeat(BAR_WIDTH - filled);
  return `${p.label} [${bar}] ${x.percent} ${x.count}  ${x.rate}  elapsed ${x.elapsed}  ETA ${x.eta}`;
}

/** `label: 34%, 340,000/1,000,000 events, 31,200 events/s, elapsed 11 s, ETA 21 s` */
export function formatPlain(p: ProgressState): string {
  const x = progressParts(p);
  return `${p.label}: ${x.percent}, ${x.count}, ${x.rate}, elapsed ${x.elapsed}, ETA ${x.eta}`;
}

export interface ProgressSink {
  tty: boolean;
  write(text: string): void;
  now(): number;
}

const stdoutSink: ProgressSink = {
  tty: !!process.stdout.isTTY,
  write: (text) => void process.stdout.write(text),
  now: () => performance.now(),
};

export interface Progress {
  update(done: number): void;
  /** The last line; `total` when the step's size is only known now (an estimate was shown). */
  finish(total?: number): void;
}

/**
 * A progress display for `total` units of `unit`. TTY: redrawn at most 10 times a second;
 * otherwise a plain line every `plainEveryS` seconds. `finish` prints the final state once.
 */
export function startProgress(label: string, initialTotal: number, unit: string, options: { sink?: ProgressSink; indent?: string; plainEveryS?: number } = {}): Progress {
  const sink = options.sink ?? stdoutSink;
  const indent = options.indent ?? '   ';
  const plainEveryMs = (options.plainEveryS ?? 5) * 1000;
  const started = sink.now();
  let total = initialTotal;
  let lastDraw = started;
  let done = 0;
  let finished = false;
  const state = (): ProgressState => ({ label, done, total, unit, elapsedS: (sink.now() - started) / 1000 });
  const draw = () => sink.write(`\r\x1b[K${indent}${formatBar(state())}`);
  return {
    update(n) {
      done = n;
      const now = sink.now();
      if (finished || now - lastDraw < (sink.tty ? 100 : plainEveryMs)) return;
      lastDraw = now;
      if (sink.tty) draw();
      else sink.write(`${indent}${formatPlain(state())}\n`);
    },
    finish(finalTotal) {
      if (finished) return;
      finished = true;
      if (finalTotal !== undefined) total = finalTotal;
      if (sink.tty) {
        draw();
        sink.write('\n');
      } else sink.write(`${indent}${formatPlain(state())}\n`);
    },
  };
}
