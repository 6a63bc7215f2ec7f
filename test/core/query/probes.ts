import type { QueryCase } from './cases';

/**
 * Seeded random expressions: a small grammar over hostile leaves, some then cut or spliced with a
 * hostile fragment. Far more shapes than the table lists by hand, hitting both outcomes.
 */
const LEAVES = [
  'event', 'distinct_id', 'timestamp', 'properties.$browser', 'properties.price', 'properties."\'; DROP TABLE events; --"',
  'person.properties.email', 'properties.`a/b`', "'x'", "'; DROP TABLE events; --'", "'ü😀\\0'", "'2024-01-01'", '1', '-1',
  '1e308', '99999999999999999999', 'now()', "'%'", "'\\\\'", 'properties.signup_date',
];
const HOSTILE_LEAVES = ['team_id', "read_csv('/etc/passwd')", "glob('*')", 'interval 1 day', 'null', 'true', 'count()'];
const ARITH = ['+', '-', '*', '/', '%'];
const COMPARE = ['=', '!=', '<', '>=', 'LIKE', 'NOT ILIKE'];
const SPLICES = [';', '--', '/*', ')', '(', "'", '"', '`', '?', 'SELECT 1', 'UNION SELECT *', ') OR (team_id = 2', '\\', 'ATTACH'];

function mulberry32(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Generated probes whose answer is the engine's own: the listed input has no meaning both engines
 * share. (Keyed by the probe's select and where, as JSON.)
 */
export const PROBES_ANSWERED_OTHERWISE: Record<string, string> = {
  '[["count()"],["match(interval 1 day, \'(?i)x|y\')"]]': "an interval as text: DuckDB writes '1 day', ClickHouse (so PostHog) '1'",
};

/** The 600 probes, the same on every run (and in every engine's test). */
export function generatedProbes(): QueryCase[] {
  const random = mulberry32(20240110);
  const pick = <T,>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const value = (depth: number): string => {
    const r = random();
    if (r < 0.1) return pick(HOSTILE_LEAVES);
    if (depth === 0 || r < 0.6) return pick(LEAVES);
    if (r < 0.8) return `${value(depth - 1)} ${pick(ARITH)} ${value(depth - 1)}`;
    return `${pick(['lower', 'toDate', 'toString', 'toStartOfDay', 'toFloat'])}(${value(depth - 1)})`;
  };
  const condition = (depth: number): string => {
    const r = random();
    if (depth === 0 || r < 0.4) return `${value(1)} ${pick(COMPARE)} ${value(1)}`;
    if (r < 0.6) return `${condition(depth - 1)} ${pick(['AND', 'OR'])} ${condition(depth - 1)}`;
    if (r < 0.7) return `NOT (${condition(depth - 1)})`;
    if (r < 0.8) return `${value(1)} ${pick(['IN', 'NOT IN'])} (${pick(LEAVES)}, ${pick(LEAVES)})`;
    if (r < 0.9) return `${value(1)} IS ${pick(['', 'NOT '])}NULL`;
    return `match(${value(1)}, ${pick(["'^a'", "'('", "'(?i)x|y'"])})`;
  };
  const mutate = (text: string): string => {
    if (random() < 0.6) return text;
    const at = Math.floor(random() * (text.length + 1));
    return text.slice(0, at) + pick(SPLICES) + text.slice(at);
  };
  return Array.from({ length: 600 }, (_, i) => ({
    name: `generated ${i}`,
    select: random() < 0.5 ? ['count()'] : [mutate(value(2))],
    where: [mutate(condition(2))],
  }));
}
