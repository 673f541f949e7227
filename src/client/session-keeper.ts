/**
 * The session keeper: opens a session, keeps it alive every `ttl / 3`
 * with one keepalive for all the locks taken in it, and tells of its loss at
 * once through an AbortSignal and a callback, as etcd's `Session.Done()`
 * does. Its locks need no renewing of their own: they end when the session
 * does (a close, an expiry, a crash of this process).
 *
 * The session counts as lost when a keepalive answers `NO_SESSION`, or when
 * no keepalive succeeded by its local deadline: the TTL from the instant the
 * last successful one was sent, less the lock keeper's clock-skew margin
 * ({@link localDeadline}), so no other instance lets another owner into one
 * of its locks while this side still counts them as held.
 */
import { Heartbeat, realTimers, type KeeperTimers } from "./heartbeat.ts";
import { Kept } from "./kept.ts";
import { LeaseholdError, LeaseholdTransportError } from "./errors.ts";
import { runHolding } from "./scoped.ts";
import type { CallOptions } from "./transport.ts";
import type {
  EmptyReply,
  LockAcquireRequest,
  LockLease,
  LockLeaseReply,
  LockReleaseRequest,
  Session,
  SessionIdRequest,
  SessionOpenRequest,
  SessionReply,
} from "../contract/messages.ts";

/** Why a session was lost. */
export type SessionLossReason =
  /** A keepalive answered `NO_SESSION`: it was closed elsewhere or expired at the service. */
  | "ended"
  /** A keepalive was refused as invalid (`BAD_REQUEST`). */
  | "refused"
  /** No keepalive succeeded before the local deadline (service unreachable or slow, or this process paused). */
  | "expired";

/** The reason a session keeper's signal is aborted with when the session is lost. */
export class SessionLostError extends Error {
  override readonly name = "SessionLostError";

  constructor(
    /** The session's id. */
    readonly session: string,
    readonly reason: SessionLossReason,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** The reason a session keeper's signal is aborted with when its owner closed it. */
export class SessionClosedError extends Error {
  override readonly name = "SessionClosedError";

  constructor(readonly session: string) {
    super(`session ${session} was closed by its owner`);
  }
}

/** Options of `client.session.keep`. */
export interface KeepSessionOptions {
  readonly owner: string;
  /** Session TTL (default: the server's `lockTtlMs`). */
  readonly ttlMs?: number;
  /** Keepalive period (default a third of the session's TTL). */
  readonly keepaliveEveryMs?: number;
  /** Idempotency key of the open (a retried open with it reaches the same session). */
  readonly requestId?: string;
  /** Called once, at once, when the session is lost (not when it is closed); the signal is aborted just before. */
  readonly onLost?: (error: SessionLostError) => void;
  /** Clock and timers (default real ones). */
  readonly timers?: KeeperTimers;
  /** Clock skew between service instances to tolerate, ms (as the lock keeper's; at most a quarter of the TTL is used). */
  readonly clockSkewMarginMs?: number;
}

/** What the session keeper needs of the session and lock endpoints. */
export interface SessionKeeperApi {
  open(request: SessionOpenRequest, options?: CallOptions): Promise<SessionReply>;
  keepalive(request: SessionIdRequest, options?: CallOptions): Promise<SessionReply>;
  close(request: SessionIdRequest, options?: CallOptions): Promise<EmptyReply>;
  acquireLock(request: LockAcquireRequest, options?: CallOptions): Promise<LockLeaseReply>;
  releaseLock(request: LockReleaseRequest, options?: CallOptions): Promise<EmptyReply>;
  /** Calls `listener` after each reconnect of the NATS connection, until the returned function is called. */
  onReconnect?(listener: () => void): () => void;
}

/** Options of taking a lock in a session. */
export interface SessionAcquireOptions {
  /** Wait up to this long in the lock's queue when it is held (default 0: `LeaseExistsError` at once). */
  readonly waitMs?: number;
  /** Idempotency key of the acquire. */
  readonly requestId?: string;
  /** Stops waiting for the lock (the acquire rejects with the signal's reason). */
  readonly signal?: AbortSignal;
}

/** A lock held under a session: it lasts as long as the session, or until released. */
export interface SessionLock {
  readonly name: string;
  /** The fencing token: constant while held, higher for every later holder. */
  readonly generation: number;
  /** The lease as granted (its `expiresAt` follows the session's keepalives at the service). */
  readonly lease: LockLease;
  /** The session's signal: aborted when the session is lost or closed. */
  readonly signal: AbortSignal;
  /** Frees the lock now (a lock already freed counts as released); the session stays. */
  release(): Promise<void>;
}

/** Opens a session and keeps it alive until closed or lost. */
export async function keepSession(api: SessionKeeperApi, options: KeepSessionOptions, requestTimeoutMs: number): Promise<SessionKeeper> {
  const timers = options.timers ?? realTimers;
  const sentAt = timers.now();
  const { session } = await api.open({
    owner: options.owner,
    ...(options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }),
    ...(options.requestId === undefined ? {} : { requestId: options.requestId }),
  });
  return new SessionKeeper(api, session, sentAt, options, requestTimeoutMs);
}

/** Keeps one session alive; locks are taken in it with {@link SessionKeeper.acquire} and {@link SessionKeeper.withLock}. */
export class SessionKeeper extends Kept<SessionLostError> {
  private current: Session;
  private state: "open" | "lost" | "closed" = "open";
  protected readonly heartbeat: Heartbeat<SessionLossReason>;

  /** Starts keeping `session`, opened by a request sent at `sentAt` (on the options' clock). */
  constructor(
    private readonly api: SessionKeeperApi,
    session: Session,
    sentAt: number,
    private readonly options: KeepSessionOptions,
    private readonly requestTimeoutMs = 5000,
  ) {
    super();
    this.current = session;
    this.heartbeat = new Heartbeat<SessionLossReason>(
      {
        beat: async (requestId, callOptions) => {
          const reply = await api.keepalive({ id: session.id, requestId }, callOptions);
          this.current = reply.session;
          return reply.session;
        },
        lossOf,
        onLoss: (reason, { cause }) => this.lose(reason, cause),
        ...(api.onReconnect === undefined ? {} : { onReconnect: (listener: () => void) => api.onReconnect!(listener) }),
        ...(options.timers === undefined ? {} : { timers: options.timers }),
        ...(options.keepaliveEveryMs === undefined ? {} : { everyMs: options.keepaliveEveryMs }),
        ...(options.clockSkewMarginMs === undefined ? {} : { clockSkewMarginMs: options.clockSkewMarginMs }),
        requestTimeoutMs,
      },
      sentAt,
      session.ttlMs,
    );
  }

  /** The session's id. */
  get id(): string {
    return this.current.id;
  }

  /** The session as last opened or kept alive. */
  get session(): Session {
    return this.current;
  }

  /** The keepalive period in ms. */
  get keepaliveEveryMs(): number {
    return this.heartbeat.everyMs;
  }

  protected get up(): boolean {
    return this.state === "open";
  }

  protected expiredLocally(): SessionLostError {
    return new SessionLostError(this.id, "expired", `session ${this.id} expired locally`);
  }

  /**
   * Takes the lock `name` under this session (no TTL of its own: the
   * session's); `NoSessionError` when the session has ended at the service,
   * `LeaseExistsError` when another holds it past `waitMs`.
   */
  async acquire(name: string, options: SessionAcquireOptions = {}): Promise<SessionLock> {
    this.throwIfLost();
    const waitMs = options.waitMs ?? 0;
    const { lease } = await this.api.acquireLock(
      {
        name,
        owner: this.options.owner,
        session: this.id,
        ...(waitMs > 0 ? { waitMs } : {}),
        ...(options.requestId === undefined ? {} : { requestId: options.requestId }),
      },
      options.signal === undefined ? undefined : { signal: options.signal },
    );
    return {
      name,
      generation: lease.generation,
      lease,
      signal: this.signal,
      release: () => this.releaseLock(name, lease.etag),
    };
  }

  /**
   * Runs `fn` holding the lock `name` under this session, then releases it
   * (also when `fn` throws); `lock.signal` aborts when the session is lost,
   * and `fn` should stop then. The session stays open.
   */
  async withLock<R>(name: string, fn: (lock: SessionLock) => Promise<R>, options?: SessionAcquireOptions): Promise<R> {
    return runHolding(await this.acquire(name, options), fn, (lock) => lock.release());
  }

  /**
   * Stops the keepalives, aborts the signal and closes the session, which
   * frees every lock taken in it (a session already ended counts as closed).
   * Idempotent; throws only when the close request itself failed (the
   * session then ends by its TTL). `await using` runs it at the end of the block.
   */
  override close(): Promise<void> {
    return super.close();
  }

  protected async doClose(): Promise<void> {
    const wasOpen = this.state === "open";
    this.state = "closed";
    this.heartbeat.stop();
    if (!wasOpen) return;
    this.controller.abort(new SessionClosedError(this.id));
    await this.heartbeat.inFlight;
    try {
      await this.api.close({ id: this.id }, { timeoutMs: this.requestTimeoutMs });
    } catch (e) {
      if (e instanceof LeaseholdError && e.code === "NO_SESSION") return;
      throw e;
    }
  }

  private async releaseLock(name: string, etag: string): Promise<void> {
    try {
      await this.api.releaseLock({ name, etag }, { timeoutMs: this.requestTimeoutMs });
    } catch (e) {
      // Freed already (the session ended, or an operator reset it): it is not ours either way.
      if (e instanceof LeaseholdError && (e.code === "ALREADY_RELEASED" || e.code === "NOT_HELD")) return;
      throw e;
    }
  }

  private lose(reason: SessionLossReason, cause?: unknown): void {
    if (this.state !== "open") return;
    this.state = "lost";
    const message =
      reason === "expired"
        ? `session ${this.id} expired: no keepalive succeeded within its ${this.current.ttlMs} ms TTL`
        : `session ${this.id} lost: ${(cause as Error).message}`;
    const error = new SessionLostError(this.id, reason, message, cause === undefined ? undefined : { cause });
    this.report(error, this.options.onLost);
  }
}

/** The loss a keepalive failure means, or undefined when it is transient and worth retrying. */
function lossOf(e: unknown): SessionLossReason | undefined {
  if (e instanceof LeaseholdTransportError || !(e instanceof LeaseholdError)) return undefined;
  if (e.code === "NO_SESSION") return "ended";
  if (e.code === "BAD_REQUEST") return "refused";
  // UNAVAILABLE (nothing changed) and answers this client does not know: keep trying until the deadline.
  return undefined;
}
