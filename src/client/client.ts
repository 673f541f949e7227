/**
 * The typed leasehold client: one method per endpoint of docs/protocol.md, grouped
 * by kind, over NATS request/reply (`client.lock.acquire(...)`), and every
 * mutation again over the durable command stream (`client.durable.host.set(...)`).
 *
 * @example
 * ```ts
 * const client = new LeaseholdClient(nc, { prefix: "leasehold" });
 * await using lock = await client.lock.keep({ name: "reports", owner: "worker-1" });
 * await writeReport({ fencingToken: lock.generation, signal: lock.signal });
 * ```
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { DurableApi } from "./durable.ts";
import { onReconnect } from "./reconnects.ts";
import { runHolding } from "./scoped.ts";
import { keepLock, type KeepOptions, type LockKeeper } from "./lock-keeper.ts";
import { keepSession, type KeepSessionOptions, type SessionKeeper } from "./session-keeper.ts";
import { LockWatch, type LockWatchOptions } from "./lock-watch.ts";
import { Election, type ElectOptions } from "./election.ts";
import { leaseProxy, withProxyLease, type HeldProxyLease, type ProxyLeaseHandle, type ProxyOutcome } from "./proxy-lease.ts";
import { Transport, type CallOptions, type LeaseholdClientOptions } from "./transport.ts";
import type * as T from "../contract/messages.ts";

/** `lock.*`: fenced distributed locks, and a keeper that renews one. */
export class LockApi {
  constructor(private readonly t: Transport) {}

  /**
   * Takes the lock if it is free or expired; `LeaseExistsError` while its
   * lease is live (not re-entrant). With `waitMs`, waits that long in the
   * lock's queue first (`LeaseExistsError` with `waitedMs` when the wait runs
   * out); `options.signal` stops waiting. The request's timeout is `waitMs`
   * longer than the client's, so a wait is never cut short by it.
   */
  acquire(request: T.LockAcquireRequest, options: CallOptions = {}): Promise<T.LockLeaseReply> {
    const waitMs = request.waitMs ?? 0;
    const timeoutMs = waitMs > 0 ? (options.timeoutMs ?? this.t.timeoutMs) + waitMs : options.timeoutMs;
    return this.t.request("lock", "acquire", request, true, timeoutMs === undefined ? options : { ...options, timeoutMs });
  }

  /** Extends the lease (new etag, same generation); `NotHeldError` for a non-holder or a stale etag. */
  renew(request: T.LockRenewRequest, options?: CallOptions): Promise<T.LockLeaseReply> {
    return this.t.request("lock", "renew", request, true, options);
  }

  /** Frees the lock; `NotHeldError` for a stale etag, `AlreadyReleasedError` when it is not held. */
  release(request: T.LockReleaseRequest, options?: CallOptions): Promise<T.EmptyReply> {
    return this.t.request("lock", "release", request, true, options);
  }

  /** The live lease, or `{lease: null}` when the lock is free. */
  get(request: T.LockNameRequest, options?: CallOptions): Promise<T.LockGetReply> {
    return this.t.request("lock", "get", request, false, options);
  }

  /** The operator's way out of `CORRUPT`: frees the lock (the generation keeps rising). */
  reset(request: T.LockNameRequest, options?: CallOptions): Promise<T.EmptyReply> {
    return this.t.request("lock", "reset", request, true, options);
  }

  /**
   * The lock's states as an async iterator, from its current state on, fed
   * by the event stream: `for await (const s of client.lock.watch("db")) ...`;
   * `break`, `return()` or the signal end it.
   */
  watch(name: string, options?: LockWatchOptions): LockWatch {
    return new LockWatch(this.t, this, name, options);
  }

  /** Calls `listener` after each reconnect of the client's connection (a keeper then renews at once), until the returned function is called. */
  onReconnect(listener: () => void): () => void {
    return onReconnect(this.t.nc, listener);
  }

  /** Acquires the lock and keeps renewing it every ttl / 3 until `close()`; tells of a loss through `signal` and `onLost`. */
  keep(options: KeepOptions): Promise<LockKeeper> {
    return keepLock(this, options, this.t.timeoutMs);
  }

  /** Runs `fn` while holding the lock, then releases it (also when `fn` throws); `fn` should stop when `keeper.signal` aborts. */
  async withLock<R>(options: KeepOptions, fn: (keeper: LockKeeper) => Promise<R>): Promise<R> {
    return runHolding(await this.keep(options), fn, (keeper) => keeper.close());
  }
}

/** `session.*`: sessions that many locks hang on, and a keeper that keeps one alive. */
export class SessionApi {
  constructor(
    private readonly t: Transport,
    private readonly locks: LockApi,
  ) {}

  /** Opens a session (the service chooses its id); a retry with the same requestId gets the same session. */
  open(request: T.SessionOpenRequest, options?: CallOptions): Promise<T.SessionReply> {
    return this.t.request("session", "open", request, true, options);
  }

  /** Extends the session by its TTL from now, and every lock held in it; `NoSessionError` once it has ended. */
  keepalive(request: T.SessionIdRequest, options?: CallOptions): Promise<T.SessionReply> {
    return this.t.request("session", "keepalive", request, true, options);
  }

  /** Ends the session, freeing every lock held in it; `NoSessionError` once it has ended. */
  close(request: T.SessionIdRequest, options?: CallOptions): Promise<T.EmptyReply> {
    return this.t.request("session", "close", request, true, options);
  }

  /** The session and the locks it holds now (sorted), or `{session: null}` once it has ended. */
  get(request: T.SessionIdRequest, options?: CallOptions): Promise<T.SessionGetReply> {
    return this.t.request("session", "get", request, false, options);
  }

  /** Opens a session and keeps it alive every ttl / 3 until `close()`; tells of a loss through `signal` and `onLost`. */
  keep(options: KeepSessionOptions): Promise<SessionKeeper> {
    const api = {
      open: this.open.bind(this),
      keepalive: this.keepalive.bind(this),
      close: this.close.bind(this),
      acquireLock: this.locks.acquire.bind(this.locks),
      releaseLock: this.locks.release.bind(this.locks),
      onReconnect: this.locks.onReconnect.bind(this.locks),
    };
    return keepSession(api, options, this.t.timeoutMs);
  }
}

/** `proxy.*`: egress proxy leases. */
export class ProxyApi {
  constructor(private readonly t: Transport) {}

  /** Registers a proxy, or updates its registration. */
  register(request: T.ProxyRegisterRequest, options?: CallOptions): Promise<T.ProxyNameReply> {
    return this.t.request("proxy", "register", request, true, options);
  }

  /** Removes a proxy (its leases keep resolving); `UnknownProxyError` when it is not registered. */
  remove(request: T.ProxyRemoveRequest, options?: CallOptions): Promise<T.ProxyNameReply> {
    return this.t.request("proxy", "remove", request, true, options);
  }

  /** Leases the best eligible proxy; `NoMatchError` (with `stats`) when none can take one. */
  acquire(request: T.ProxyAcquireRequest, options?: CallOptions): Promise<T.ProxyAcquireReply> {
    return this.t.request("proxy", "acquire", request, true, options);
  }

  /** Releases a lease (idempotent: unknown ids are fine). */
  release(request: T.ProxyReleaseRequest, options?: CallOptions): Promise<T.EmptyReply> {
    return this.t.request("proxy", "release", request, true, options);
  }

  /** Reports a lease's outcome; `rate_limited` and `banned` start a cooldown; `UnknownLeaseError` when it does not resolve. */
  report(request: T.ProxyReportRequest, options?: CallOptions): Promise<T.ProxyReportReply> {
    return this.t.request("proxy", "report", request, true, options);
  }

  /** Every registered proxy with its load and cooldowns, sorted by name. */
  list(options?: CallOptions): Promise<T.ProxyListReply> {
    return this.t.request("proxy", "list", {}, false, options);
  }

  /** Active leases per proxy (proxies with none are absent). */
  counts(options?: CallOptions): Promise<T.ProxyCountsReply> {
    return this.t.request("proxy", "counts", {}, false, options);
  }

  /** Acquires a lease as a scoped resource: `await using lease = await client.proxy.lease(...)` releases it at the end of the block. */
  lease(request: T.ProxyAcquireRequest, options?: CallOptions): Promise<HeldProxyLease> {
    return leaseProxy(this, request, options);
  }

  /**
   * Acquires a lease, runs `fn` with it, reports a non-`ok` result and
   * releases, returning `fn`'s value; when `fn` throws, nothing is reported
   * and the lease is released (see {@link withProxyLease}).
   */
  withLease<V>(
    request: T.ProxyAcquireRequest,
    fn: (lease: ProxyLeaseHandle) => Promise<ProxyOutcome<V>>,
    options?: CallOptions,
  ): Promise<V> {
    return withProxyLease(this, request, fn, options);
  }
}

/** `host.*`: the hosts routes are placed on. */
export class HostApi {
  constructor(private readonly t: Transport) {}

  /** Sets a host's health and draining flag (a host never set counts as unhealthy). */
  set(request: T.HostSetRequest, options?: CallOptions): Promise<T.HostSetReply> {
    return this.t.request("host", "set", request, true, options);
  }

  /** Every host that was set, with its active route leases, sorted by name. */
  list(options?: CallOptions): Promise<T.HostListReply> {
    return this.t.request("host", "list", {}, false, options);
  }
}

/** `route.*`: sticky placement of conversations on hosts. */
export class RouteApi {
  constructor(private readonly t: Transport) {}

  /**
   * Places (or finds) the conversation's host; `NoHostError` / `PinnedDownError`
   * when none is usable. No automatic requestId here: acquiring again simply
   * finds the placement again (so the retry on timeout is safe without one),
   * and without a requestId a reuse writes nothing (last use is coalesced).
   * Pass `{autoRequestId: true}` or a `requestId` for a strictly repeated answer.
   */
  acquire(request: T.RouteAcquireRequest, options?: CallOptions): Promise<T.RouteAcquireReply> {
    return this.t.request("route", "acquire", request, true, { ...options, autoRequestId: options?.autoRequestId ?? false }, true);
  }

  /** Moves the conversation's lease to `host` (no health check). */
  move(request: T.RouteMoveRequest, options?: CallOptions): Promise<T.RouteMoveReply> {
    return this.t.request("route", "move", request, true, options);
  }

  /** Adds hosts to the route's seen set (what `pin` accepts). */
  candidates(request: T.RouteCandidatesRequest, options?: CallOptions): Promise<T.EmptyReply> {
    return this.t.request("route", "candidates", request, true, options);
  }

  /** Pins the route to a host it has seen; `UnknownHostError` otherwise. */
  pin(request: T.RoutePinRequest, options?: CallOptions): Promise<T.EmptyReply> {
    return this.t.request("route", "pin", request, true, options);
  }

  /** Removes the route's pin. */
  unpin(request: T.RouteNameRequest, options?: CallOptions): Promise<T.EmptyReply> {
    return this.t.request("route", "unpin", request, true, options);
  }

  /** Drops every lease of the route (the pin stays). */
  release(request: T.RouteNameRequest, options?: CallOptions): Promise<T.RouteReleaseReply> {
    return this.t.request("route", "release", request, true, options);
  }

  /** The route's pin and leases. */
  get(request: T.RouteNameRequest, options?: CallOptions): Promise<T.RouteGetReply> {
    return this.t.request("route", "get", request, false, options);
  }

  /** Every active route lease. */
  snapshot(options?: CallOptions): Promise<T.RouteSnapshotReply> {
    return this.t.request("route", "snapshot", {}, false, options);
  }
}

/** A typed client of one leasehold service (one prefix) on a NATS connection it does not own. */
export class LeaseholdClient {
  readonly lock: LockApi;
  readonly session: SessionApi;
  readonly proxy: ProxyApi;
  readonly host: HostApi;
  readonly route: RouteApi;
  /** Every mutation, published to the durable command stream instead of requested. */
  readonly durable: DurableApi;
  private readonly transport: Transport;

  constructor(nc: NatsConnection, options: LeaseholdClientOptions = {}) {
    this.transport = new Transport(nc, options);
    this.lock = new LockApi(this.transport);
    this.session = new SessionApi(this.transport, this.lock);
    this.proxy = new ProxyApi(this.transport);
    this.host = new HostApi(this.transport);
    this.route = new RouteApi(this.transport);
    this.durable = new DurableApi(this.transport);
  }

  /** The service prefix this client talks to. */
  get prefix(): string {
    return this.transport.subjects.prefix;
  }

  /** Where replies to this client arrive (`_INBOX_<user>` for a user of `leasehold nats-config`). */
  get inboxPrefix(): string {
    return this.transport.inboxPrefix;
  }

  /** The per-attempt request timeout, ms. */
  get timeoutMs(): number {
    return this.transport.timeoutMs;
  }

  /**
   * Contends for leadership of `name` until `options.signal` aborts (or the
   * returned election is stopped): `onElected({generation})` when this
   * contender leads, with the generation as its term and fencing token;
   * `onDeposed` as soon as it no longer does. See docs/client.md.
   */
  elect(name: string, options: ElectOptions): Election {
    return new Election(this.lock, name, options, this.transport.timeoutMs);
  }

  /** Sends any `<kind>.<op>` request (for ops this client does not type); `mutating` adds a requestId. */
  request<Reply>(kind: string, op: string, body: object, mutating: boolean, options?: CallOptions): Promise<Reply> {
    return this.transport.request(kind, op, body, mutating, options);
  }
}
