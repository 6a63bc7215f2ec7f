// A restart, for bench/persons.ts: a fresh process opens the store over `argv[2]` and loads
// project 1's persons, as its first request would; prints the time and the heap they hold as JSON.
// Its own process, so no store of the parent's (freed or not by then) moves the heap measured.
import { openStorage } from '../src/storage';

const heap = () => {
  Bun.gc(true);
  return process.memoryUsage().heapUsed;
};
const storage = await openStorage({ dataDir: process.argv[2]! });
try {
  const before = heap();
  const rss = process.memoryUsage().rss;
  const started = performance.now();
  await storage.persons.ensureLoaded(1);
  const loadMs = performance.now() - started;
  const found = storage.persons.findByDistinctId(1, process.argv[3]!) !== null;
  console.log(JSON.stringify({ loadMs, heap: heap() - before, rss: process.memoryUsage().rss - rss, found }));
} finally {
  await storage.close();
}
