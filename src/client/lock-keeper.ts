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
 * anything, since only its monotonic time is used. The timing (renew
 * schedule, loss deadline, retries across reconnects) is the heartbeat's,
 * shared with the session keeper (heartbeat.ts).
 */
import { LeaseholdError, LeaseholdTransportError } from "./errors.ts";
import { Heartbeat, realTimers, type KeeperTimers } from "./heartbeat.ts";
import { Kept } from "./kept.ts";
import type { CallOptions } from "./transport.ts";
import type {
  EmptyReply,
  LockAcquireRequest,
  LockLease,
  LockLeaseReply,
  LockReleaseRequest,
  LockRenewRequest,
} from "../contract/messages.ts";

export { DEFAULT_CLOCK_SKEW_MARGIN_MS, localDeadline, realTimers, type KeeperTimers } from "./heartbeat.ts";

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

/** Renews one held lock until it is closed or lost. */
export class LockKeeper extends Kept<LockLostError> {
  private current: LockLease;
  private state: KeeperState = "held";
  /** The lease turned out not to be ours any more while closing: nothing to release. */
  private gone = false;
  protected readonly heartbeat: Heartbeat<LockLossReason>;

  /** Starts keeping `lease`, acquired by a request sent at `sentAt` (on `timers`' clock). */
  constructor(
    private readonly api: KeeperLockApi,
    lease: LockLease,
    sentAt: number,
    private readonly options: KeepOptions,
    private readonly timers: KeeperTimers = realTimers,
    private readonly requestTimeoutMs = 5000,
  ) {
    super();
    this.current = lease;
    this.heartbeat = new Heartbeat<LockLossReason>(
      {
        beat: (requestId, callOptions) => this.renew(requestId, callOptions),
        lossOf,
        onLoss: (reason, detail) => this.lose(reason, detail),
        ...(api.onReconnect === undefined ? {} : { onReconnect: (listener: () => void) => api.onReconnect!(listener) }),
        timers,
        ...(options.renewEveryMs === undefined ? {} : { everyMs: options.renewEveryMs }),
        ...(options.clockSkewMarginMs === undefined ? {} : { clockSkewMarginMs: options.clockSkewMarginMs }),
        requestTimeoutMs,
      },
      sentAt,
      lease.ttlMs,
    );
  }

  /** The renew period in ms. */
  get renewEveryMs(): number {
    return this.heartbeat.everyMs;
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

  protected get up(): boolean {
    return this.state === "held";
  }

  protected expiredLocally(): LockLostError {
    return new LockLostError(this.options.name, this.generation, "expired", `lock ${this.options.name} expired locally`);
  }

  /**
   * Stops renewing, aborts the signal, and releases the lock (a lock that
   * turns out to be released or held by another already counts as released).
   * Idempotent; throws only when the release request itself failed (the
   * lease then expires by its TTL). `await using` runs it at the end of the block.
   */
  override close(): Promise<void> {
    return super.close();
  }

  protected async doClose(): Promise<void> {
    const wasHeld = this.state === "held";
    if (wasHeld) {
      this.state = "closing";
      this.controller.abort(new LockClosedError(this.options.name, this.generation));
    }
    this.heartbeat.stop();
    try {
      if (!wasHeld) return;
      // A renew in flight may yet change the etag: release with the newest.
      await this.heartbeat.inFlight;
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

  /**
   * One renew. Retries of one renew reuse its requestId (the heartbeat's), so
   * a renew that took effect but whose reply was lost is answered again
   * rather than refused as NOT_HELD for the etag it replaced.
   */
  private async renew(requestId: string, callOptions: CallOptions): Promise<LockLease> {
    const request: LockRenewRequest = {
      name: this.options.name,
      owner: this.options.owner,
      etag: this.current.etag,
      requestId,
      ...(this.options.ttlMs === undefined ? {} : { ttlMs: this.options.ttlMs }),
    };
    try {
      const { lease } = await this.api.renew(request, callOptions);
      if (this.state === "held" || this.state === "closing") this.current = lease;
      return lease;
    } catch (e) {
      if (this.state === "closing" && lossOf(e) !== undefined) this.gone = true;
      throw e;
    }
  }

  private lose(reason: LockLossReason | "expired", { cause, wokeLate }: { cause?: unknown; wokeLate?: boolean }): void {
    if (this.state !== "held") return;
    this.state = "lost";
    const name = this.options.name;
    const message =
      reason !== "expired"
        ? `lock ${name} lost (generation ${this.generation}): ${(cause as Error).message}`
        : wokeLate === true
          ? `lock ${name} expired: this process woke after its ${this.current.ttlMs} ms TTL had passed`
          : `lock ${name} expired: no renew succeeded within its ${this.current.ttlMs} ms TTL`;
    const error = new LockLostError(name, this.generation, reason, message, cause === undefined ? undefined : { cause });
    this.report(error, this.options.onLost);
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
