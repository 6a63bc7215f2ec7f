/**
 * Child process for the kill -9 test: opens the store (recovering whatever the previous child
 * left) and appends batches forever, printing `A <cycle> <first> <count>` after each append
 * resolves. Small segments and eager compaction put crashes inside loads and compactions too.
 */
import { join } from 'node:path';
import { openDatabase } from '../../../src/storage/db';
import { createEventStore } from '../../../src/storage/events';
import { makeEvent } from './helpers';

const [dataDir, cycleArg] = process.argv.slice(2);
const cycle = Number(cycleArg);
const db = await openDatabase(join(dataDir, 'db.duckdb'));
const store = await createEventStore(db, {
  dataDir,
  bufferMaxRows: 1500,
  bufferMaxAgeMs: 40,
  compactMinRows: 3000,
  purgeGraceMs: 50,
  // Loads of a full segment go straight to Parquet, age-based ones to the hot table; merges
  // run as soon as a team-day has 4 files: crashes land in every kind of write.
  directMinRows: 1000,
  mergeMinFiles: 4,
  mergeMinAgeMs: 100,
  checkpointWalBytes: 1024 * 1024,
});
process.stdout.write('READY\n');
let seq = 0;
const writer = async () => {
  for (;;) {
    const first = seq;
    const count = 50 + (first % 150);
    seq += count;
    // Unique per cycle and sequence; team spread over three projects.
    const rows = Array.from({ length: count }, (_, i) => {
      const n = first + i;
      return makeEvent(n, { uuid: `c${cycle}-${n}`, teamId: 1 + (n % 3) });
    });
    try {
      await store.append(rows);
      process.stdout.write(`A ${cycle} ${first} ${count}\n`);
    } catch {
      await Bun.sleep(5); // 503: not acknowledged, the test does not count it
    }
  }
};
await Promise.all([writer(), writer(), writer(), writer()]);
