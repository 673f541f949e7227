/**
 * The lock keeper: holds a lock by renewing it every `ttl / 3`, exposes the
 * generation as a fencing token, and reports a loss at once, through a
 * callback and an AbortSignal (as etcd's session `Done()` and client-go's
 * `OnStoppedLeading` do); `close()` (or `await using`) releases it.
 *
 * The keeper judges expiry by its own clock only, and conservatively: a lease
 * granted or renewed by a request sent at local instant `t` cannot expire
 * before `t + ttlMs` by the clock of the instance that decided it (it decided
 * after `t`). Another instance whose clock runs ahead of that one may judge
 * it expired that much earlier, so the keeper declares the lock lost at
 * `t + ttlMs` less a skew margin (2 s, at most a quarter of the TTL: {@link localDeadline})
 * unless a later renew succeeded. Instances whose clocks disagree by no more
 * than the margin never let another owner in while the keeper counts the lock
 * as held (docs/cluster.md, Clock skew); the client's own clock may be off by
 * anything, since only its monotonic time is used.
 *
 * Longer than 400 lines on purpose: the renew schedule, the loss deadline,
 * the retries across reconnects and the release act on one lease and one
 * timer, and are read together when reasoning about when the lock is lost.
 */
import { randomUUID } from "node:crypto";
import { LeaseholdError, LeaseholdTransportError } from "./errors.ts";
import type { CallOptions } from "./transport.ts";
import type {
  EmptyReply,
  LockAcquireRequest,
  LockLease,
  LockLeaseReply,
  LockReleaseRequest,
  LockRenewRequest,
} from "../contract/messages.ts";

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

/** Why a kept lock was lost. */
export type LockLossReason =
  /** A renew answered `NOT_HELD`: someone else acquired it (or reset it and it was taken). */
  | "not-held"
  /** A renew answered `ALREADY_RELEASED`. */
  | "released"
  /** A renew answered `CORRUPT`: an operator must reset the lock. */
  | "corrupt"
  /** A renew was refused as invalid (`BAD_REQUEST`, `TTL_EXCEEDS_MAX`). */
  | "refused"
  /** No renew succeeded before the lease would have expired (service unreachable or slow). */
  | "expired";

/** The reason a keeper's signal is aborted with when the lock is lost. */
export class LockLostError extends Error {
  override readonly name = "LockLostError";

  constructor(
    /** The lock's name. */
    readonly lock: string,
    /** The generation (fencing token) that is no longer held. */
    readonly generation: number,
    readonly reason: LockLossReason,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The reason a keeper's signal is aborted with when its owner closed it. */
export class LockClosedError extends Error {
  override readonly name = "LockClosedError";

  constructor(
    readonly lock: string,
    readonly generation: number,
  ) {
    super(`lock ${lock} (generation ${generation}) was closed by its owner`);
  }
}

/** Options of `client.lock.keep`. */
export interface KeepOptions {
  readonly name: string;
  readonly owner: string;
  /** Lease TTL asked for on acquire and every renew (default: the server's `lockTtlMs`). */
  readonly ttlMs?: number;
  /** Called once, at once, when the lock is lost (not when it is closed); the signal is aborted just before. */
  readonly onLost?: (error: LockLostError) => void;
  /** Renew period (default a third of the lease's TTL). */
  readonly renewEveryMs?: number;
  /** Idempotency key of the acquire. */
  readonly requestId?: string;
  /** Wait up to this long in the lock's queue when it is held (default 0: `LeaseExistsError` at once). */
  readonly waitMs?: number;
  /** Stops waiting for the lock (the acquire rejects with the signal's reason); it does not close a lock already held. */
  readonly signal?: AbortSignal;
  /** Clock and timers (default real ones). */
  readonly timers?: KeeperTimers;
  /** Clock skew between service instances to tolerate, ms (default {@link DEFAULT_CLOCK_SKEW_MARGIN_MS}; at most a quarter of the TTL is used). */
  readonly clockSkewMarginMs?: number;
}

/** What the keeper needs of the lock endpoints. */
export interface KeeperLockApi {
  acquire(request: LockAcquireRequest, options?: CallOptions): Promise<LockLeaseReply>;
  renew(request: LockRenewRequest, options?: CallOptions): Promise<LockLeaseReply>;
  release(request: LockReleaseRequest, options?: CallOptions): Promise<EmptyReply>;
  /** Calls `listener` after each reconnect of the NATS connection, until the returned function is called. */
  onReconnect?(listener: () => void): () => void;
}

/** Acquires a lock (throws LeaseExistsError and the like when it cannot) and keeps it until closed or lost. */
export async function keepLock(api: KeeperLockApi, options: KeepOptions, requestTimeoutMs: number): Promise<LockKeeper> {
  const timers = options.timers ?? realTimers;
  const sentAt = timers.now();
  const request: LockAcquireRequest = { name: options.name, owner: options.owner };
  const waitMs = options.waitMs ?? 0;
  const { lease } = await api.acquire(
    {
      ...request,
      ...(options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }),
      ...(options.requestId === undefined ? {} : { requestId: options.requestId }),
      ...(waitMs > 0 ? { waitMs } : {}),
    },
    options.signal === undefined ? undefined : { signal: options.signal },
  );
  if (waitMs === 0) return new LockKeeper(api, lease, sentAt, options, timers, requestTimeoutMs);
  // After a wait, when the grant was decided is unknown here (anywhere since sentAt): a renew at once
  // gives the keeper a start it can count the TTL from without trusting the server's clock.
  const renewSentAt = timers.now();
  try {
    const renewed = await api.renew({ name: options.name, owner: options.owner, etag: lease.etag, ttlMs: lease.ttlMs });
    return new LockKeeper(api, renewed.lease, renewSentAt, options, timers, requestTimeoutMs);
  } catch (e) {
    await api.release({ name: options.name, etag: lease.etag }).catch(() => undefined);
    throw e;
  }
}

type KeeperState = "held" | "lost" | "closing" | "closed";

/** The longest pause between tries of a renew that failed transiently: a service coming back is found within it. */
const MAX_RETRY_GAP_MS = 500;

/** Renews one held lock until it is closed or lost. */
export class LockKeeper implements AsyncDisposable {
  /** The renew period in ms. */
  readonly renewEveryMs: number;
  private current: LockLease;
  private deadline: number;
  private state: KeeperState = "held";
  private lostWith: LockLostError | undefined;
  private readonly controller = new AbortController();
  private renewTimer: unknown;
  private expiryTimer: unknown;
  private inFlight: Promise<void> | undefined;
  /** The lease turned out not to be ours any more while closing: nothing to release. */
  private gone = false;
  /** The requestId of a renew that failed transiently and waits for its next try. */
  private retrying: string | undefined;
  /** Stops the attempt in flight from waiting for its reply (after a reconnect). */
  private attemptAbort: AbortController | undefined;
  private readonly stopWatching: () => void;
  private closed: Promise<void> | undefined;

  /** Starts keeping `lease`, acquired by a request sent at `sentAt` (on `timers`' clock). */
  constructor(
    private readonly api: KeeperLockApi,
    lease: LockLease,
    sentAt: number,
    private readonly options: KeepOptions,
    private readonly timers: KeeperTimers = realTimers,
    private readonly requestTimeoutMs = 5000,
  ) {
    this.current = lease;
    this.deadline = localDeadline(sentAt, lease.ttlMs, options.clockSkewMarginMs);
    this.renewEveryMs = options.renewEveryMs ?? Math.max(1, Math.floor(lease.ttlMs / 3));
    this.stopWatching = api.onReconnect?.(() => this.renewAfterReconnect()) ?? (() => undefined);
    this.armExpiry();
    if (this.state === "held") this.scheduleRenew(sentAt + this.renewEveryMs - timers.now());
  }

  /** The lease as last granted or renewed. */
  get lease(): LockLease {
    return this.current;
  }

  /** The fencing token: constant while this keeper holds the lock, higher for every later holder. */
  get generation(): number {
    return this.current.generation;
  }

  /** The lease's current etag (changes on every renew). */
  get etag(): string {
    return this.current.etag;
  }

  /** When the server will let the lease expire unless renewed (server instant, RFC 3339). */
  get expiresAt(): string {
    return this.current.expiresAt;
  }

  /** Aborted when the lock is lost (reason: a {@link LockLostError}) or closed (a {@link LockClosedError}). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why the lock was lost, or undefined while it is held (or after a clean close). */
  get lost(): LockLostError | undefined {
    return this.lostWith;
  }

  /** True while the lock is held by this keeper (neither lost, nor past its local deadline, nor closed). */
  get held(): boolean {
    return this.state === "held" && this.timers.now() < this.deadline;
  }

  /** Milliseconds left before the lease would expire without another renew (by the local, conservative deadline). */
  get remainingMs(): number {
    return Math.max(0, this.deadline - this.timers.now());
  }

  /** Throws the loss (or closure) unless the lock is still held; a guard before each fenced step. */
  throwIfLost(): void {
    if (this.held) return;
    if (this.signal.aborted) throw this.signal.reason;
    throw new LockLostError(this.options.name, this.generation, "expired", `lock ${this.options.name} expired locally`);
  }

  /**
   * Stops renewing, aborts the signal, and releases the lock (a lock that
   * turns out to be released or held by another already counts as released).
   * Idempotent; throws only when the release request itself failed (the
   * lease then expires by its TTL).
   */
  close(): Promise<void> {
    this.closed ??= this.doClose();
    return this.closed;
  }

  /** `await using keeper = await client.lock.keep(...)` releases at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private async doClose(): Promise<void> {
    const wasHeld = this.state === "held";
    if (wasHeld) {
      this.state = "closing";
      this.controller.abort(new LockClosedError(this.options.name, this.generation));
    }
    this.timers.clearTimeout(this.renewTimer);
    this.timers.clearTimeout(this.expiryTimer);
    this.stopWatching();
    try {
      if (!wasHeld) return;
      await this.inFlight;
      if (this.gone) return;
      try {
        await this.api.release({ name: this.options.name, etag: this.current.etag }, { timeoutMs: this.requestTimeoutMs });
      } catch (e) {
        // Released, reset or taken over meanwhile: either way it is no longer ours.
        if (e instanceof LeaseholdError && (e.code === "ALREADY_RELEASED" || e.code === "NOT_HELD")) return;
        throw e;
      }
    } finally {
      this.state = "closed";
    }
  }

  private armExpiry(): void {
    this.timers.clearTimeout(this.expiryTimer);
    const left = this.deadline - this.timers.now();
    if (left <= 0) {
      this.lose("expired", `lock ${this.options.name} expired: no renew succeeded within its ${this.current.ttlMs} ms TTL`);
      return;
    }
    this.expiryTimer = this.timers.setTimeout(() => {
      if (this.state !== "held") return;
      this.lose("expired", `lock ${this.options.name} expired: no renew succeeded within its ${this.current.ttlMs} ms TTL`);
    }, left);
  }

  private scheduleRenew(delayMs: number, requestId?: string): void {
    this.timers.clearTimeout(this.renewTimer);
    this.renewTimer = this.timers.setTimeout(
      () => {
        if (this.state !== "held") return;
        // Woken past the local deadline (a paused process): the lease may be someone else's by now.
        // Say so before anything else; a renew sent now could only be refused, or succeed too late to matter.
        if (this.timers.now() >= this.deadline) {
          this.lose("expired", `lock ${this.options.name} expired: this process woke after its ${this.current.ttlMs} ms TTL had passed`);
          return;
        }
        const attempt = this.attempt(requestId ?? randomUUID());
        this.inFlight = attempt;
        void attempt.finally(() => {
          if (this.inFlight === attempt) this.inFlight = undefined;
        });
      },
      Math.max(0, delayMs),
    );
  }

  /**
   * NATS is back: a reply awaited from before (the service that took the
   * renew may be gone) is given up and the renew sent again at once, as is a
   * retry waiting for its turn, instead of either waiting out its timeout or
   * gap while the lease runs down.
   */
  private renewAfterReconnect(): void {
    if (this.state !== "held") return;
    if (this.attemptAbort !== undefined) this.attemptAbort.abort(new Error("NATS reconnected"));
    else if (this.retrying !== undefined) this.scheduleRenew(0, this.retrying);
  }

  /**
   * One renew attempt, bounded by the time the lease has left (and by the
   * request timeout). Retries of one renew reuse its requestId, so a renew
   * that took effect but whose reply was lost is answered again rather than
   * refused as NOT_HELD for the etag it replaced. Never rejects.
   */
  private async attempt(requestId: string): Promise<void> {
    const sentAt = this.timers.now();
    const left = this.deadline - sentAt;
    const abort = new AbortController();
    this.attemptAbort = abort;
    const request: LockRenewRequest = {
      name: this.options.name,
      owner: this.options.owner,
      etag: this.current.etag,
      requestId,
      ...(this.options.ttlMs === undefined ? {} : { ttlMs: this.options.ttlMs }),
    };
    try {
      // Each attempt is bounded by the time left; this loop does the retrying.
      const { lease } = await this.api.renew(request, {
        timeoutMs: Math.max(1, Math.min(this.requestTimeoutMs, left)),
        retry: false,
        signal: abort.signal,
      });
      if (this.state === "lost" || this.state === "closed") return;
      this.retrying = undefined;
      this.current = lease;
      this.deadline = localDeadline(sentAt, lease.ttlMs, this.options.clockSkewMarginMs);
      if (this.state !== "held") return;
      this.armExpiry();
      this.scheduleRenew(sentAt + this.renewEveryMs - this.timers.now());
    } catch (e) {
      if (this.state === "lost" || this.state === "closed") return;
      const loss = lossOf(e);
      if (this.state === "closing") {
        if (loss !== undefined) this.gone = true;
        return;
      }
      if (abort.signal.aborted) {
        this.scheduleRenew(0, requestId);
        return;
      }
      if (loss !== undefined) {
        this.lose(loss, `lock ${this.options.name} lost (generation ${this.generation}): ${(e as Error).message}`, e);
        return;
      }
      // Transient (timeout, no responder, UNAVAILABLE): try again soon, with the same requestId, until the local deadline.
      this.retrying = requestId;
      this.scheduleRenew(Math.max(10, Math.min(MAX_RETRY_GAP_MS, Math.floor(this.renewEveryMs / 6))), requestId);
    } finally {
      if (this.attemptAbort === abort) this.attemptAbort = undefined;
    }
  }

  private lose(reason: LockLossReason, message: string, cause?: unknown): void {
    if (this.state !== "held") return;
    this.state = "lost";
    this.timers.clearTimeout(this.renewTimer);
    this.timers.clearTimeout(this.expiryTimer);
    this.stopWatching();
    const error = new LockLostError(this.options.name, this.generation, reason, message, cause === undefined ? undefined : { cause });
    this.lostWith = error;
    this.controller.abort(error);
    const onLost = this.options.onLost;
    if (onLost === undefined) return;
    try {
      onLost(error);
    } catch (e) {
      // The owner's callback failed: surface it as any throwing callback would, not inside the keeper.
      queueMicrotask(() => {
        throw e;
      });
    }
  }
}

/** The loss a renew failure means, or undefined when it is transient and worth retrying. */
function lossOf(e: unknown): LockLossReason | undefined {
  if (e instanceof LeaseholdTransportError) return undefined;
  if (!(e instanceof LeaseholdError)) return undefined;
  switch (e.code) {
    case "NOT_HELD":
      return "not-held";
    case "ALREADY_RELEASED":
      return "released";
    case "CORRUPT":
      return "corrupt";
    case "BAD_REQUEST":
    case "TTL_EXCEEDS_MAX":
      return "refused";
    default:
      // UNAVAILABLE (nothing changed) and answers this client does not know: keep trying until the deadline.
      return undefined;
  }
}
