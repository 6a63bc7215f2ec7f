import { AppError, clientClosed } from '../../errors';

/**
 * Capture bodies in hand at once, in bytes: from before a body is read until its request is
 * answered. A body in hand costs several times its size while it is parsed and its rows are
 * prepared (the parsed events, their rows, their person changes), so a few large batches read at
 * once took the process well past its memory plan; see bench/NOTES.md. A request that would
 * pass the budget waits for room before its body is read (an unread body stays in the client's
 * socket, not in this process), in arrival order, at most `maxWaitMs`, and is then refused with
 * 503 and `Retry-After`. Waiting costs the ingest rate nothing: the bodies in hand already keep
 * the parser thread busy.
 *
 * A body that fits is taken at once even while larger ones wait, when it is small
 * (`SMALL_BODY_BYTES`): single events are never held behind a large batch. A body larger than
 * the budget is taken alone. A body of unknown length is taken small and taken again as the largest
 * once it is read past that (capture/index.ts).
 */
export class BodyBudget {
  private used = 0;
  private readonly waiting: Waiter[] = [];
  private refusals = 0;

  constructor(
    readonly maxBytes: number,
    private readonly maxWaitMs: number,
    /** Runs `fn` after `ms` unless cancelled (tests run it when they choose). */
    private readonly schedule: (fn: () => void, ms: number) => () => void = (fn, ms) => {
      const timer = setTimeout(fn, ms);
      return () => clearTimeout(timer);
    },
  ) {}

  /** Bytes in hand now. */
  get inHand(): number {
    return this.used;
  }

  /** Requests waiting for room now. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Requests refused since the start (no room within the wait). */
  get refused(): number {
    return this.refusals;
  }

  /**
   * Room for a body of `bytes`: resolves with its release (call it once, when the request is
   * answered). A wait ends early when the signal `leftOn` gives aborts (the client left): rejected
   * as `client_closed`, and its place given to those behind it. (A getter: only a request that
   * waits has its signal made.)
   */
  take(bytes: number, leftOn?: () => AbortSignal): Promise<() => void> {
    const size = Math.min(Math.max(0, bytes), this.maxBytes);
    if (this.fits(size) && (this.waiting.length === 0 || size <= SMALL_BODY_BYTES)) return Promise.resolve(this.grant(size));
    const signal = leftOn?.();
    if (signal?.aborted) return Promise.reject(clientClosed());
    if (this.maxWaitMs <= 0) return Promise.reject(this.refuse());
    return new Promise((resolve, reject) => {
      const leave = (why: 'timeout' | 'left') => {
        const at = this.waiting.indexOf(waiter);
        if (at < 0) return;
        this.waiting.splice(at, 1);
        waiter.cancel();
        reject(why === 'timeout' ? this.refuse() : clientClosed());
        this.next();
      };
      const onAbort = () => leave('left');
      const stopTimer = this.schedule(() => leave('timeout'), this.maxWaitMs);
      const waiter: Waiter = {
        size,
        resolve,
        cancel: () => {
          stopTimer();
          signal?.removeEventListener('abort', onAbort);
        },
      };
      this.waiting.push(waiter);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private refuse(): AppError {
    this.refusals++;
    return refused();
  }

  private fits(size: number): boolean {
    return this.used === 0 || this.used + size <= this.maxBytes;
  }

  private grant(size: number): () => void {
    this.used += size;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.used -= size;
      this.next();
    };
  }

  /** Waiters let in, in arrival order, while the first fits. */
  private next(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0].size)) {
      const waiter = this.waiting.shift()!;
      waiter.cancel();
      waiter.resolve(this.grant(waiter.size));
    }
  }
}

interface Waiter {
  size: number;
  resolve: (release: () => void) => void;
  cancel: () => void;
}

/** Bodies up to this size never wait behind larger ones: a single event or a small batch. */
export const SMALL_BODY_BYTES = 64 * 1024;

const refused = () => new AppError('unavailable', 'Too many large request bodies are being received; retry later.', null, { retryAfter: 1 });
