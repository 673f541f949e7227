/**
 * The timing core of the lock keeper and the session keeper: one beat (a keepalive) every period,
 * each bounded by the time the lease has left; a transient failure is tried
 * again soon with the same requestId until the local deadline; a reconnect
 * of NATS sends the beat again at once; a refusal or a passed deadline ends
 * it, once, through `onLoss`. Pure timing: what a beat sends and what a
 * failure means are the owner's.
 */
import { randomUUID } from "node:crypto";
import type { CallOptions } from "./transport.ts";

/** How much clock skew between service instances the keeper tolerates by default, ms. */
export const DEFAULT_CLOCK_SKEW_MARGIN_MS = 2000;

/**
 * When a keeper stops counting on a lease granted or renewed by a request
 * sent at `sentAt` (local monotonic ms): `ttlMs` later, less the skew margin,
 * which is at most a quarter of the TTL (a lease under 8 s tolerates less
 * than the default 2 s; the renew, every third of the TTL, still comes first).
 */
export function localDeadline(sentAt: number, ttlMs: number, skewMarginMs = DEFAULT_CLOCK_SKEW_MARGIN_MS): number {
  return sentAt + ttlMs - Math.min(skewMarginMs, Math.floor(ttlMs / 4));
}

/** The clock and timers a keeper runs on (real ones by default; fakes in tests). */
export interface KeeperTimers {
  /** Monotonic milliseconds. */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Real timers; `performance.now()` does not jump with the wall clock. */
export const realTimers: KeeperTimers = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Calls a keeper's `onLost` callback; a callback that throws is surfaced as any throwing callback would be, not inside the keeper. */
export function callOnLost<E>(onLost: ((error: E) => void) | undefined, error: E): void {
  if (onLost === undefined) return;
  try {
    onLost(error);
  } catch (e) {
    queueMicrotask(() => {
      throw e;
    });
  }
}

/** The longest pause between tries of a beat that failed transiently: a service coming back is found within it. */
const MAX_RETRY_GAP_MS = 500;

/** What a heartbeat runs on. */
export interface HeartbeatSpec<Reason extends string> {
  /** Sends one beat; resolves with the TTL the service granted from the instant it was sent. */
  beat(requestId: string, options: CallOptions): Promise<{ readonly ttlMs: number }>;
  /** The loss a failed beat means, or undefined when it is transient and worth retrying. */
  lossOf(error: unknown): Reason | undefined;
  /** Called once, when a refusal (`cause`) or the local deadline (`wokeLate`: found passed on waking) ends the heartbeat. */
  onLoss(reason: Reason | "expired", detail: { readonly cause?: unknown; readonly wokeLate?: boolean }): void;
  /** Calls `listener` after each reconnect of NATS, until the returned function is called. */
  onReconnect?(listener: () => void): () => void;
  readonly timers?: KeeperTimers;
  /** Beat period, ms (default a third of the TTL). */
  readonly everyMs?: number;
  readonly clockSkewMarginMs?: number;
  readonly requestTimeoutMs: number;
}

/** Beats until stopped or lost, keeping the local deadline of a lease granted at `sentAt` for `ttlMs`. */
export class Heartbeat<Reason extends string> {
  /** The beat period in ms. */
  readonly everyMs: number;
  private deadline: number;
  private running = true;
  private beatTimer: unknown;
  private expiryTimer: unknown;
  private retrying: string | undefined;
  private attemptAbort: AbortController | undefined;
  private readonly stopWatching: () => void;
  private readonly timers: KeeperTimers;
  /** The beat in flight, if any (close waits for it). */
  inFlight: Promise<void> | undefined;

  constructor(
    private readonly spec: HeartbeatSpec<Reason>,
    sentAt: number,
    ttlMs: number,
  ) {
    this.timers = spec.timers ?? realTimers;
    this.deadline = localDeadline(sentAt, ttlMs, spec.clockSkewMarginMs);
    this.everyMs = spec.everyMs ?? Math.max(1, Math.floor(ttlMs / 3));
    this.stopWatching = spec.onReconnect?.(() => this.beatAfterReconnect()) ?? (() => undefined);
    this.armExpiry();
    if (this.running) this.schedule(sentAt + this.everyMs - this.timers.now());
  }

  /** Milliseconds left before the local, conservative deadline. */
  get remainingMs(): number {
    return Math.max(0, this.deadline - this.timers.now());
  }

  /** True until stopped or lost, and while the local deadline has not passed. */
  get alive(): boolean {
    return this.running && this.timers.now() < this.deadline;
  }

  /** Stops beating (no loss is reported; a beat in flight is let finish: see {@link inFlight}); idempotent. */
  stop(): void {
    this.running = false;
    this.timers.clearTimeout(this.beatTimer);
    this.timers.clearTimeout(this.expiryTimer);
    this.stopWatching();
  }

  private lose(reason: Reason | "expired", detail: { cause?: unknown; wokeLate?: boolean } = {}): void {
    if (!this.running) return;
    this.stop();
    this.spec.onLoss(reason, detail);
  }

  private armExpiry(): void {
    this.timers.clearTimeout(this.expiryTimer);
    const left = this.deadline - this.timers.now();
    if (left <= 0) return this.lose("expired");
    this.expiryTimer = this.timers.setTimeout(() => this.lose("expired"), left);
  }

  private schedule(delayMs: number, requestId?: string): void {
    this.timers.clearTimeout(this.beatTimer);
    this.beatTimer = this.timers.setTimeout(
      () => {
        if (!this.running) return;
        // Woken past the deadline (a paused process): the locks may be someone else's by now; say so first.
        if (this.timers.now() >= this.deadline) return this.lose("expired", { wokeLate: true });
        const attempt = this.attempt(requestId ?? randomUUID());
        this.inFlight = attempt;
        void attempt.finally(() => {
          if (this.inFlight === attempt) this.inFlight = undefined;
        });
      },
      Math.max(0, delayMs),
    );
  }

  /** NATS is back: a reply awaited from before is given up and the beat sent again at once, as is a retry waiting for its turn. */
  private beatAfterReconnect(): void {
    if (!this.running) return;
    if (this.attemptAbort !== undefined) this.attemptAbort.abort(new Error("NATS reconnected"));
    else if (this.retrying !== undefined) this.schedule(0, this.retrying);
  }

  /** One beat, bounded by the time left; retries reuse its requestId so a beat whose reply was lost is answered again. Never rejects. */
  private async attempt(requestId: string): Promise<void> {
    const sentAt = this.timers.now();
    const abort = new AbortController();
    this.attemptAbort = abort;
    try {
      const { ttlMs } = await this.spec.beat(requestId, {
        timeoutMs: Math.max(1, Math.min(this.spec.requestTimeoutMs, this.deadline - sentAt)),
        retry: false,
        signal: abort.signal,
      });
      if (!this.running) return;
      this.retrying = undefined;
      this.deadline = localDeadline(sentAt, ttlMs, this.spec.clockSkewMarginMs);
      this.armExpiry();
      if (this.running) this.schedule(sentAt + this.everyMs - this.timers.now());
    } catch (e) {
      if (!this.running) return;
      if (abort.signal.aborted) return this.schedule(0, requestId);
      const loss = this.spec.lossOf(e);
      if (loss !== undefined) return this.lose(loss, { cause: e });
      this.retrying = requestId;
      this.schedule(Math.max(10, Math.min(MAX_RETRY_GAP_MS, Math.floor(this.everyMs / 6))), requestId);
    } finally {
      if (this.attemptAbort === abort) this.attemptAbort = undefined;
    }
  }
}
