/**
 * A strict reader of the Prometheus text format for tests: every line must be a HELP, a TYPE
 * or a sample of a family declared before it, or it throws.
 */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
  /** The value of the one sample with this name and (a superset of) these labels. */
  value(name: string, labels?: Record<string, string>): number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;
const SUFFIXES = ['_bucket', '_sum', '_count'];

export function parseExposition(text: string): Exposition {
  if (!text.endsWith('\n')) throw new Error('exposition must end with a newline');
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.slice(0, -1).split('\n')) {
    const meta = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)$/.exec(line);
    if (meta) {
      if (meta[1] === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(meta[3])) throw new Error(`bad type: ${line}`);
        if (types.has(meta[2])) throw new Error(`family declared twice: ${meta[2]}`);
        types.set(meta[2], meta[3]);
      }
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const [, name, , labelText, raw] = m;
    const family = types.has(name) ? name : SUFFIXES.map((s) => name.endsWith(s) && name.slice(0, -s.length)).find((f) => f && types.get(f) === 'histogram');
    if (!family) throw new Error(`sample of an undeclared family: ${line}`);
    const labels: Record<string, string> = {};
    if (labelText) {
      LABEL.lastIndex = 0;
      while (LABEL.lastIndex < labelText.length) {
        const l = LABEL.exec(labelText);
        if (!l) throw new Error(`bad labels: ${line}`);
        labels[l[1]] = l[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
      }
    }
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    if (Number.isNaN(value) && raw !== 'NaN') throw new Error(`bad value: ${line}`);
    samples.push({ name, labels, value });
  }
  return {
    types,
    samples,
    value(name, labels = {}) {
      const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
      if (found.length !== 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
      return found[0].value;
    },
  };
}
