import { hotValuesOf, type StoredEventRow } from '../src/core/events/columns';
import { appendWaiting } from './_append';
import { openStorage, type ErasedEvents, type Storage } from '../src/storage';
import { randomKit, seeded, webProperties } from './_events';
import type { BenchRow, Benchmark } from './types';

/**
 * The cost of a GDPR erasure (`DELETE /persons/:id/?delete_events=true`, i.e. `storage.deletePerson`)
 * on a month of data: N seeded web events (~1 KB, 30 days ending now, 50k distinct ids) appended
 * through the event store's write path in 10k batches, compacted to one Parquet file per day and
 * copied by person, as a settled month is. Then three persons with a few hundred events each,
 * spread over the month as an active user's are, are deleted one after another: wall time, the
 * rows removed, and the files and bytes written again (every file holding one of their rows is
 * rewritten without it). The baseline, in the same run: reading one such person's events (every
 * column, the whole month), which is what the erasure's search costs at least.
 */
const DAY = 86_400_000;
const SEED = 20240601;
const TARGETS = 3;

function createRows(total: number, endMs: number, targets: Array<{ distinctId: string; uuid: string }>, perTarget: number) {
  const k = randomKit(seeded(SEED));
  const users = Array.from({ length: 50_000 }, () => `user-${k.hex(12)}`);
  const events = ['$pageview', '$pageview', '$pageview', '$autocapture', '$pageleave', 'clicked_button', 'signed_up', 'purchase'];
  const start = endMs - 30 * DAY;
  // Every (total / (targets × perTarget))-th row is a target's, round robin: spread over the month.
  const every = Math.floor(total / (targets.length * perTarget));
  let i = 0;
  return (): StoredEventRow => {
    const ts = Math.floor(start + (i / total) * 30 * DAY + k.rand() * 1000);
    const target = i % every === 0 && i / every < targets.length * perTarget ? targets[(i / every) % targets.length] : undefined;
    i++;
    const distinctId = target?.distinctId ?? k.pick(users);
    const props = webProperties(k, { ts, distinctId, deviceId: distinctId, sessionId: `s-${k.hex(8)}`, path: '/' });
    return {
      uuid: k.uuid7(ts),
      teamId: 1,
      event: k.pick(events),
      distinctId,
      personId: target?.uuid ?? null,
      properties: JSON.stringify(props),
      timestamp: ts,
      createdAt: ts + 50,
      elementsChain: '',
      hot: hotValuesOf(props),
    };
  };
}

async function load(storage: Storage, total: number, next: () => StoredEventRow) {
  const inFlight = new Set<Promise<void>>();
  for (let sent = 0; sent < total; ) {
    const rows: StoredEventRow[] = [];
    for (let n = 0; n < 10_000 && sent < total; n++, sent++) rows.push(next());
    const append = appendWaiting(storage, rows);
    inFlight.add(append);
    append.finally(() => inFlight.delete(append));
    if (inFlight.size >= 4) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
  await storage.events.flush();
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const MB = 1024 * 1024;

const bench: Benchmark = async ({ tmpDir, quick, log }) => {
  const total = quick ? 100_000 : 1_000_000;
  const perTarget = quick ? 100 : 300;
  const storage = await openStorage({ dataDir: tmpDir, personCopies: true, eventStore: { autoCompact: false, purgeGraceMs: 0 } });
  try {
    await storage.persons.ensureLoaded(1);
    const targets = Array.from({ length: TARGETS }, (_, n) => {
      const plan = storage.persons.processEvent(1, {
        uuid: crypto.randomUUID(), event: '$identify', distinctId: `target-${n}`, properties: {}, timestamp: Date.now() - 30 * DAY,
        set: { email: `target-${n}@example.com` }, setOnce: {}, unset: [], anonDistinctId: null, alias: null, processPerson: true,
      });
      return { distinctId: `target-${n}`, uuid: plan.personId! };
    });
    const loadStarted = performance.now();
    await load(storage, total, createRows(total, Date.now() - DAY, targets, perTarget));
    await storage.events.compact();
    const copies = await storage.events.buildPersonCopies();
    const before = storage.events.stats();
    log(`loaded, compacted and copied ${total.toLocaleString()} events in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s: ${before.parquetFiles} files, ${(before.parquetBytes / MB).toFixed(0)} MB, ${copies} person copies`);

    // Baseline: read one person's whole month of events (what the erasure must find at least).
    const reads: number[] = [];
    for (const t of targets) {
      const started = performance.now();
      const relation = await storage.events.eventsRelation(1);
      let rows = 0;
      for await (const chunk of storage.events.streamQuery(`SELECT * FROM ${relation.sql} AS events WHERE distinct_id = ?`, [t.distinctId])) rows += chunk.length;
      reads.push(performance.now() - started);
      if (rows !== perTarget) throw new Error(`expected ${perTarget} rows of ${t.distinctId}, read ${rows}`);
    }

    const runs: Array<{ ms: number; erased: ErasedEvents }> = [];
    for (const t of targets) {
      const started = performance.now();
      const done = await storage.deletePerson(1, t.uuid, { deleteEvents: true });
      const ms = performance.now() - started;
      if (!done?.events || done.events.rows !== perTarget) throw new Error(`expected ${perTarget} rows erased, got ${done?.events?.rows}`);
      runs.push({ ms, erased: done.events });
      log(`erased ${t.distinctId}: ${Math.round(ms)} ms, ${done.events.filesRewritten} files (${(done.events.bytesRewritten / MB).toFixed(1)} MB) and ${done.events.copiesRewritten} copies (${(done.events.copyBytesRewritten / MB).toFixed(1)} MB) written again`);
    }
    const after = storage.events.stats();
    if (after.parquetRows !== before.parquetRows - TARGETS * perTarget) throw new Error('rows left behind or lost');
    const row = (name: string, pick: (r: { ms: number; erased: ErasedEvents }) => number): BenchRow => ({ case: name, median: median(runs.map(pick)), min: Math.min(...runs.map(pick)), max: Math.max(...runs.map(pick)) });
    return {
      name: 'erase',
      rows: [
        { case: `read one person's month (${perTarget} events)`, median: median(reads), min: Math.min(...reads), max: Math.max(...reads) },
        row("erase one person's events: wall ms", (r) => r.ms),
        row('rows removed', (r) => r.erased.rows),
        row('Parquet files rewritten', (r) => r.erased.filesRewritten),
        row('Parquet MB rewritten', (r) => r.erased.bytesRewritten / MB),
        row('person copies rewritten', (r) => r.erased.copiesRewritten),
        row('person copy MB rewritten', (r) => r.erased.copyBytesRewritten / MB),
      ],
      notes: [
        `${total.toLocaleString()} events over 30 days: ${before.parquetFiles} Parquet files (${(before.parquetBytes / MB).toFixed(0)} MB) and ${copies} person copies; ${TARGETS} persons of ${perTarget} events each, deleted one after another`,
        `erase/read ratio (medians): ${(median(runs.map((r) => r.ms)) / median(reads)).toFixed(1)}×`,
      ],
    };
  } finally {
    await storage.close();
  }
};

export default bench;
