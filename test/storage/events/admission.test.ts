import { expect, test } from 'bun:test';
import { tmpdir } from 'node:os';
import { Admission } from '../../../src/storage/events/admission';
import { DiskSpace } from '../../../src/storage/events/disk-space';
import { newCounters } from '../../../src/storage/events/settings';
import { AppError } from '../../../src/errors';

const MiB = 1024 * 1024;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

function setup() {
  const state = { closed: false, pending: 0, queued: 0, speed: 10 * MiB };
  const counters = newCounters();
  const disk = new DiskSpace(tmpdir(), 0, () => 0);
  const admission = new Admission({ maxPendingBytes: 100 * MiB, maxQueuedBytes: 8 * MiB, log: silent }, counters, disk, {
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
