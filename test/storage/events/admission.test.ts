import { expect, test } from 'bun:test';
import { tmpdir } from 'node:os';
import { Admission } from '../../../src/storage/events/admission';
import { DiskSpace } from '../../../src/storage/events/disk-space';
import { newCounters } from '../../../src/storage/events/settings';
import { AppError } from '../../../src/errors';

const MiB = 1024 * 1024;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

function setup(limits: { maxBacklogSeconds?: number; loadMaxBytes?: number } = {}) {
  const state = { closed: false, pending: 0, queued: 0, speed: 10 * MiB };
  const counters = newCounters();
  const disk = new DiskSpace(tmpdir(), 0, () => 0);
  // Unless a test says otherwise, the time bound is far past the byte cap.
  const settings = { maxPendingBytes: 100 * MiB, maxBacklogSeconds: 3600, loadMaxBytes: MiB, maxQueuedBytes: 8 * MiB, log: silent, ...limits };
  const admission = new Admission(settings, counters, disk, {
    closed: () => state.closed,
    pendingBytes: () => state.pending,
    queuedBytes: () => state.queued,
    loadBytesPerSec: () => state.speed,
  });
  return { state, counters, disk, admission };
}

/** What `admit` answers: null when taken, else the refusal's detail, Retry-After and whether it was counted. */
function answer(admission: Admission, counters: ReturnType<typeof newCounters>, bytes: number) {
  const before = counters.rejectedAppends;
  try {
    admission.admit(bytes);
    return null;
  } catch (error) {
    const e = error as AppError;
    return { kind: e.kind, detail: e.detail, retryAfter: e.retryAfter, counted: counters.rejectedAppends - before };
  }
}

test('an append is taken within the caps; past them refused, the reason in order: shutting down, disk, backlog, log queue', () => {
  const { state, counters, disk, admission } = setup();
  expect(admission.refusal(0)).toBeNull();
  expect(answer(admission, counters, MiB)).toBeNull();
  state.queued = 8 * MiB;
  expect(admission.refusal(0)).toBeNull(); // at the cap, not past it
  expect(admission.refusal(1)).toBe('log_queue');
  state.pending = 100 * MiB;
  expect(admission.refusal(1)).toBe('backlog');
  disk.low = true;
  expect(admission.refusal(0)).toBe('disk_low');
  state.closed = true;
  expect(admission.refusal(0)).toBe('closed');
});

test('the backlog is capped at maxBacklogSeconds of loading at the recent speed: a few loads at least, maxPendingBytes at most', () => {
  const { state, counters, admission } = setup({ maxBacklogSeconds: 2 });
  // 10 MiB/s for 2 s: 20 MiB.
  expect(admission.backlogCap()).toBe(20 * MiB);
  state.pending = 19 * MiB;
  expect(answer(admission, counters, MiB)).toBeNull(); // at the cap, not past it
  expect(answer(admission, counters, MiB + 1)).toEqual({ kind: 'unavailable', detail: 'The event store is behind; retry later.', retryAfter: 2, counted: 1 });
  state.pending = 20 * MiB + 1;
  expect(admission.refusal(0)).toBe('backlog'); // what readiness reports
  // Slower loads, a smaller backlog; never under four loads' worth.
  state.speed = 4 * MiB;
  expect(admission.backlogCap()).toBe(8 * MiB);
  state.speed = MiB / 10;
  expect(admission.backlogCap()).toBe(4 * MiB);
  state.pending = 3 * MiB;
  expect(admission.refusal(MiB)).toBeNull();
  expect(admission.refusal(MiB + 1)).toBe('backlog');
  // Faster loads: up to maxPendingBytes, not past it.
  state.speed = 1000 * MiB;
  expect(admission.backlogCap()).toBe(100 * MiB);
});

test('a refused client waits what the backlog takes to load at the recent speed, 1 to 60 s; 30 s for a full disk; a closing store is not counted as a refusal', () => {
  const { state, counters, disk, admission } = setup();
  state.pending = 95 * MiB;
  expect(answer(admission, counters, 10 * MiB)).toEqual({ kind: 'unavailable', detail: 'The event store is behind; retry later.', retryAfter: 10, counted: 1 });
  state.speed = 1 * MiB;
  expect(admission.backlogRetryAfter()).toBe(60);
  state.speed = 1000 * MiB;
  expect(admission.backlogRetryAfter()).toBe(1);
  state.pending = 0;
  state.queued = 9 * MiB;
  expect(answer(admission, counters, 0)).toEqual({ kind: 'unavailable', detail: 'The event log is behind; retry later.', retryAfter: 1, counted: 1 });
  disk.low = true;
  expect(answer(admission, counters, 0)).toEqual({ kind: 'unavailable', detail: 'The disk is nearly full.', retryAfter: 30, counted: 1 });
  state.closed = true;
  expect(answer(admission, counters, 0)).toEqual({ kind: 'unavailable', detail: 'The event store is shutting down.', retryAfter: 5, counted: 0 });
});

test('a write the log failed is counted and answered 503: 30 s when the disk is full (which marks it low), else 5 s', () => {
  const { counters, disk, admission } = setup();
  const failed = (error: Error) => {
    try {
      admission.writeFailed(error);
    } catch (e) {
      return { detail: (e as AppError).detail, retryAfter: (e as AppError).retryAfter };
    }
    throw new Error('writeFailed returned');
  };
  expect(failed(Object.assign(new Error('EIO'), { code: 'EIO' }))).toEqual({ detail: 'The event store could not write to its log; retry later.', retryAfter: 5 });
  expect(disk.low).toBe(false);
  expect(failed(Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' }))).toEqual({ detail: 'The event store could not write to its log; retry later.', retryAfter: 30 });
  expect(disk.low).toBe(true);
  expect(counters.rejectedAppends).toBe(2);
});
