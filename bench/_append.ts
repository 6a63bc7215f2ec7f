import { isAppError } from '../src/errors';
import type { StoredEventRow } from '../src/core/events/columns';
import type { Storage } from '../src/storage';

/**
 * Append rows to set up a bench's data, waiting out the store's backpressure (its 503) as a
 * client would. Setup only: what it measures is not the production capture path.
 */
export async function appendWaiting(storage: Storage, rows: StoredEventRow[]): Promise<void> {
  for (let attempt = 0; attempt < 1_000; attempt++) {
    try {
      return await storage.events.append(rows);
    } catch (error) {
      if (!isAppError(error) || error.kind !== 'unavailable') throw error;
      await Bun.sleep(100);
    }
  }
  throw new Error('the event store stayed full');
}
