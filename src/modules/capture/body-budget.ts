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
 * the budget is taken alone. A request whose body turns out larger than first counted holds more
 * through its `BodyRoom`.
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

/**
 * The room one request holds, grown when its body turns out larger than first counted (a chunked
 * body read past a small size, a body found compressed by its bytes). What more it needs waits
 * like a new body's room, in arrival order and at most the budget's wait, while what it holds
 * stays counted: the bytes already read are in hand. Bodies that grow and wait can fill the
 * budget between them; their waits then end in 503s, which give their room back.
 */
export class BodyRoom {
  private releases: Array<() => void> = [];
  private held = 0;

  constructor(
    private readonly budget: BodyBudget,
    private readonly leftOn?: () => AbortSignal,
  ) {}

  /** Room for `bytes` in all (at most the budget's), once there is. */
  async growTo(bytes: number): Promise<void> {
    const target = Math.min(Math.max(0, bytes), this.budget.maxBytes);
    if (target <= this.held) return;
    this.releases.push(await this.budget.take(target - this.held, this.leftOn));
    this.held = target;
  }

  /** Everything held given back (once the request is answered). */
  release(): void {
    for (const release of this.releases) release();
    this.releases = [];
    this.held = 0;
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
