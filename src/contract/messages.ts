/**
 * Request and reply bodies of every endpoint, exactly as docs/protocol.md writes
 * them (the wire is already camelCase, so these are also the client's types).
 */

/** Any request may carry an idempotency key of 1 to 128 characters. */
export interface RequestBase {
  /** Repeating a successful command with the same id within the dedup window returns its first answer. */
  readonly requestId?: string;
}

/** A reply with no fields (`{}`). */
export type EmptyReply = Record<string, never>;

// ---- locks ----

/** A lock's lease; `generation` is the fencing token, `etag` changes on every acquire and renew. */
export interface LockLease {
  readonly name: string;
  readonly owner: string;
  readonly generation: number;
  readonly etag: string;
  /** Server instant (RFC 3339, ms) at which the lease expires. */
  readonly expiresAt: string;
  readonly ttlMs: number;
  /** The session the lease hangs on: its `ttlMs` and `expiresAt` are the session's. */
  readonly session?: string;
}

/** `lock.acquire` request. */
export interface LockAcquireRequest extends RequestBase {
  readonly name: string;
  readonly owner: string;
  /** Defaults to the server's `lockTtlMs`; not together with `session`. */
  readonly ttlMs?: number;
  /** Take the lock under this session: `owner` must be the session's, the lease ends when the session does. */
  readonly session?: string;
  /**
   * How long to wait in the lock's queue when it is held (default 0: fail
   * fast with `LeaseExistsError`); at most the server's `--max-wait-ms`.
   * Waiters are granted the lock in the order they joined.
   */
  readonly waitMs?: number;
}
/** `lock.renew` request. */
export interface LockRenewRequest extends RequestBase {
  readonly name: string;
  readonly owner: string;
  readonly etag: string;
  /** Defaults to the lease's own TTL. */
  readonly ttlMs?: number;
}
/** `lock.release` request. */
export interface LockReleaseRequest extends RequestBase {
  readonly name: string;
  readonly etag: string;
}
/** `lock.get` and `lock.reset` request. */
export interface LockNameRequest extends RequestBase {
  readonly name: string;
}
/** `lock.acquire` and `lock.renew` reply. */
export interface LockLeaseReply {
  readonly lease: LockLease;
}
/** `lock.get` reply: null when the lock is free (an expired lease counts as free). */
export interface LockGetReply {
  readonly lease: LockLease | null;
  /** Acquires waiting in the lock's queue. */
  readonly waiters?: number;
}

// ---- sessions ----

/** A session: a lease that lock leases hang on; one keepalive keeps all of them. */
export interface Session {
  /** Chosen by the service; usable as a subject token. */
  readonly id: string;
  readonly owner: string;
  readonly ttlMs: number;
  /** Server instant (RFC 3339, ms) at which the session ends unless kept alive. */
  readonly expiresAt: string;
}
/** `session.open` request. */
export interface SessionOpenRequest extends RequestBase {
  readonly owner: string;
  /** Defaults to the server's `lockTtlMs`. */
  readonly ttlMs?: number;
}
/** `session.keepalive`, `session.close` and `session.get` request. */
export interface SessionIdRequest extends RequestBase {
  readonly id: string;
}
/** `session.open` and `session.keepalive` reply. */
export interface SessionReply {
  readonly session: Session;
}
/** `session.get` reply: null (and no `locks`) when the session ended or never existed. */
export type SessionGetReply =
  { readonly session: Session; readonly locks: readonly string[] } | { readonly session: null; readonly locks?: undefined };

// ---- proxies ----

/** What a proxy lease was used for turned out as. */
export type ProxyResult = "ok" | "rate_limited" | "banned";

/** Candidate counts of a `proxy.acquire`; `considered` minus the others is the eligible count. */
export interface ProxyStats {
  readonly considered: number;
  readonly unhealthy: number;
  readonly inCooldown: number;
  readonly atCapacity: number;
}

/** `proxy.register` request (registering again updates). */
export interface ProxyRegisterRequest extends RequestBase {
  readonly proxy: string;
  /** 0 means never leasable. */
  readonly maxLeases: number;
  readonly latencyMs?: number;
  readonly labels?: Readonly<Record<string, string>>;
  readonly healthy?: boolean;
}
/** `proxy.remove` request. */
export interface ProxyRemoveRequest extends RequestBase {
  readonly proxy: string;
}
/** `proxy.register` and `proxy.remove` reply. */
export interface ProxyNameReply {
  readonly proxy: string;
}
/** `proxy.acquire` request. */
export interface ProxyAcquireRequest extends RequestBase {
  readonly ttlMs: number;
  /** `""` (the default) means no particular target. */
  readonly target?: string;
  /** Only these proxies (each must be registered); default every registered proxy. */
  readonly candidates?: readonly string[];
  /** Only proxies whose labels hold every one of these pairs. */
  readonly labels?: Readonly<Record<string, string>>;
}
/** A granted proxy lease. */
export interface ProxyLease {
  readonly id: string;
  readonly proxy: string;
  readonly target: string;
  readonly expiresAt: string;
}
/** `proxy.acquire` reply. */
export interface ProxyAcquireReply {
  readonly lease: ProxyLease;
  readonly stats: ProxyStats;
}
/** `proxy.release` request (idempotent: unknown ids are fine). */
export interface ProxyReleaseRequest extends RequestBase {
  readonly leaseId: string;
}
/** `proxy.report` request. */
export interface ProxyReportRequest extends RequestBase {
  readonly leaseId: string;
  readonly result: ProxyResult;
  /** The target the cooldown applies to; default the lease's own target. */
  readonly target?: string;
}
/** `proxy.report` reply; `cooldownUntilAt` when a cooldown was recorded. */
export interface ProxyReportReply {
  readonly cooldownUntilAt?: string;
}
/** One entry of `proxy.list`. */
export interface ProxyInfo {
  readonly proxy: string;
  readonly maxLeases: number;
  readonly latencyMs: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly healthy: boolean;
  readonly active: number;
  /** `streak`: the place of this cooldown in its (proxy, target) streak of bans. */
  readonly cooldowns: readonly { readonly target: string; readonly untilAt: string; readonly streak: number }[];
}
/** `proxy.list` reply, sorted by proxy. */
export interface ProxyListReply {
  readonly proxies: readonly ProxyInfo[];
}
/** `proxy.counts` reply: active leases per proxy, proxies with none absent. */
export interface ProxyCountsReply {
  readonly counts: Readonly<Record<string, number>>;
}

// ---- hosts ----

/** `host.set` request (a host never set counts as unhealthy). */
export interface HostSetRequest extends RequestBase {
  readonly host: string;
  readonly healthy: boolean;
  readonly draining?: boolean;
  /** Cap on the route leases the chooser places on the host; absent or null: no limit. */
  readonly maxLeases?: number | null;
}
/** `host.set` reply. */
export interface HostSetReply {
  readonly host: string;
}
/** One entry of `host.list`. */
export interface HostInfo {
  readonly host: string;
  readonly healthy: boolean;
  readonly draining: boolean;
  /** The cap on new route leases, null when unlimited (full when `active` reaches it). */
  readonly maxLeases: number | null;
  /** Active route leases on the host, all routes. */
  readonly active: number;
  /** The load the host last published, null when unknown or stale. */
  readonly load?: number | null;
}
/** `host.list` reply, sorted by host. */
export interface HostListReply {
  readonly hosts: readonly HostInfo[];
}

// ---- routes ----

/** A conversation key: `fp` may be `""` (the route's own lease), `model` may be `""`. */
export interface RouteKey {
  readonly route: string;
  readonly fp: string;
  readonly model: string;
}
/** `route.acquire` request. */
export interface RouteAcquireRequest extends RequestBase, RouteKey {
  readonly candidates: readonly string[];
}
/** `route.acquire` reply. */
export interface RouteAcquireReply {
  readonly host: string;
  readonly reused: boolean;
}
/** `route.move` request. */
export interface RouteMoveRequest extends RequestBase, RouteKey {
  readonly host: string;
}
/** `route.move` reply; `from` is `""` when there was no lease. */
export interface RouteMoveReply {
  readonly from: string;
  readonly host: string;
}
/** `route.candidates` request. */
export interface RouteCandidatesRequest extends RequestBase {
  readonly route: string;
  readonly hosts: readonly string[];
}
/** `route.pin` request. */
export interface RoutePinRequest extends RequestBase {
  readonly route: string;
  readonly host: string;
}
/** `route.unpin`, `route.release` and `route.get` request. */
export interface RouteNameRequest extends RequestBase {
  readonly route: string;
}
/** `route.release` reply: how many leases were dropped (the pin stays). */
export interface RouteReleaseReply {
  readonly released: number;
}
/** A route lease. */
export interface RouteLease extends RouteKey {
  readonly host: string;
  readonly createdAt: string;
  readonly lastUsedAt: string;
}
/** `route.get` reply; `pinned` is `""` when the route is not pinned. */
export interface RouteGetReply {
  readonly pinned: string;
  readonly leases: readonly RouteLease[];
}
/** `route.snapshot` reply: every active lease, sorted by route, fp, model. */
export interface RouteSnapshotReply {
  readonly leases: readonly RouteLease[];
}
