import { AppError } from '../../errors';
import type { DiskSpace } from './disk-space';
import type { Counters, Settings } from './settings';
import type { EventStoreStats } from './types';

export const REFUSALS = {
  disk_low: 'The disk is nearly full.',
  backlog: 'The event store is behind; retry later.',
  log_queue: 'The event log is behind; retry later.',
} as const;

/** What admission reads of the store, as it is now. */
export interface AdmissionState {
  closed(): boolean;
  /** Bytes accepted and not loaded yet: queued for the log, in its segments, being processed or loaded. */
  pendingBytes(): number;
  /** Bytes accepted and not written to the log yet. */
  queuedBytes(): number;
  /** The recent load speed, for how long a refused client should wait. */
  loadBytesPerSec(): number;
}

/**
 * Loads' worth of backlog always taken, whatever the recent speed: the speed is measured on
 * loads, and a burst after a quiet spell (or at the start) has none recent to go by.
 */
const BACKLOG_FLOOR_LOADS = 4;

/**
 * Whether the store takes an append: it refuses (503 with Retry-After) rather than hold more than
 * its caps allow — the disk below its reserve, more accepted and not loaded yet than it loads in
 * `maxBacklogSeconds` (at most `maxPendingBytes`), more than `maxQueuedBytes` waiting for the
 * log — so a backlog never grows without bound, an acknowledged event is queryable within about
 * `maxBacklogSeconds`, and what was acknowledged stays safe. The wait asked of a refused client
 * is what the backlog takes to load at the recent speed (1–60 s), 30 s for a full disk.
 */
export class Admission {
  constructor(
    private readonly s: Pick<Settings, 'maxPendingBytes' | 'maxBacklogSeconds' | 'loadMaxBytes' | 'maxQueuedBytes' | 'log'>,
    private readonly counters: Counters,
    private readonly disk: DiskSpace,
    private readonly state: AdmissionState,
  ) {}

  /** Throws the refusal when an append of `bytes` may not be taken now. */
  admit(bytes: number): void {
    const refused = this.refusal(bytes);
    if (refused === null) return;
    if (refused === 'closed') throw new AppError('unavailable', 'The event store is shutting down.', null, { retryAfter: 5 });
    this.counters.rejectedAppends++;
    const retryAfter = refused === 'disk_low' ? 30 : this.backlogRetryAfter();
    throw new AppError('unavailable', REFUSALS[refused], null, { retryAfter });
  }

  /** Seconds the backlog takes to load at the recent speed (1–60): how long a client refused for it should wait. */
  backlogRetryAfter(): number {
    return Math.min(60, Math.max(1, Math.ceil(this.state.pendingBytes() / this.state.loadBytesPerSec())));
  }

  /** The most bytes accepted and not loaded the store holds now: `maxBacklogSeconds` of loading at the recent speed, a few loads at least, `maxPendingBytes` at most. */
  backlogCap(): number {
    const bySpeed = this.state.loadBytesPerSec() * this.s.maxBacklogSeconds;
    return Math.min(this.s.maxPendingBytes, Math.max(BACKLOG_FLOOR_LOADS * this.s.loadMaxBytes, bySpeed));
  }

  /** Why an append of `bytes` would be refused now, or null (also what readiness reports, for 0 bytes). */
  refusal(bytes: number): EventStoreStats['backpressure'] {
    if (this.state.closed()) return 'closed';
    if (this.disk.low) return 'disk_low';
    if (this.state.pendingBytes() + bytes > this.backlogCap()) return 'backlog';
    if (this.state.queuedBytes() + bytes > this.s.maxQueuedBytes) return 'log_queue';
    return null;
  }

  /** An append the log could not write: counted, and answered 503 (longer when the disk is full). */
  writeFailed(error: unknown): never {
    this.counters.rejectedAppends++;
    const full = this.disk.noteWriteError(error);
    this.s.log.error('event log write failed', { error: String(error) });
    throw new AppError('unavailable', 'The event store could not write to its log; retry later.', null, { retryAfter: full ? 30 : 5, cause: error });
  }
}
