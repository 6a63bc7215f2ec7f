import { appendFileSync } from 'node:fs';
import { createWriter } from '../../src/cluster/writer';
import { silentLogger } from '../../src/logger';
import { createIntakeProcessor, type LoggedProcessor } from '../../src/pipeline';
import type { ClickHouse } from '../../src/storage/clickhouse/client';
import { openRedisLog } from '../../src/storage/log/redis-streams';
import { createTestApp } from './test-app';

/**
 * A writer process for the poison-entry test (`bun test/helpers/dying-writer.ts`): the cluster's
 * writer and pipeline over the test's Redis log (REDIS_URL, PREFIX, one partition), that dies
 * with SIGKILL, as the kernel's out-of-memory killer ends a process, the moment it processes an
 * entry whose body contains POISON. The rows it inserts are appended to OUT as ClickHouse would
 * get them (one tab-separated line each). It runs passes until one finds nothing, then exits 0.
 */
const { REDIS_URL, PREFIX, OUT, POISON } = process.env as Record<string, string>;
const app = await createTestApp();
const log = await openRedisLog({ url: REDIS_URL, prefix: PREFIX, partitions: 1 });
const processor = createIntakeProcessor(app.deps.storage.persons, app.deps.storage.seen).logged;
const dying: LoggedProcessor = (context, text, newUuid) => {
  if (text.includes(POISON)) process.kill(process.pid, 'SIGKILL');
  return processor(context, text, newUuid);
};
const ch = {
  features: { datetime64: false },
  table: (name: string) => name,
  async insertTabSeparated(_table: string, _columns: string[], rows: Iterable<string>) {
    appendFileSync(OUT, [...rows].join(''));
  },
} as unknown as ClickHouse;
const writer = createWriter({ consumer: `dying-${process.pid}`, log, ch, persons: app.deps.storage.persons, process: dying, logger: silentLogger });
for (let i = 0; i < 10; i++) {
  const pass = await writer.pass();
  if (pass.taken === 0 && pass.deadLettered === 0) break;
}
await writer.release();
log.close();
await app.close();
process.exit(0);
