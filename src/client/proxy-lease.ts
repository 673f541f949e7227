/**
 * Proxy lease helpers: a lease as a scoped resource (`await using lease =
 * await client.proxy.lease(...)`, released at the end of the block), and
 * `withLease`, which acquires, hands the proxy to a function, reports the
 * outcome the function returns and releases, in one call.
 */
import type { CallOptions } from "./transport.ts";
import type {
  EmptyReply,
  ProxyAcquireReply,
  ProxyAcquireRequest,
  ProxyLease,
  ProxyReleaseRequest,
  ProxyReportReply,
  ProxyReportRequest,
  ProxyResult,
  ProxyStats,
} from "../contract/messages.ts";

/** The lease handed to a `withLease` function. */
export interface ProxyLeaseHandle extends ProxyLease {
  /** How the candidates were counted when the lease was granted. */
  readonly stats: ProxyStats;
  /** Aborted when the lease's TTL has run out (by the local clock, from when the acquire was sent). */
  readonly signal: AbortSignal;
}

/** What a `withLease` function returns: the result for the proxy, and the value `withLease` returns. */
export interface ProxyOutcome<T> {
  readonly result: ProxyResult;
  readonly value: T;
  /** Target the cooldown applies to (default the lease's own target). */
  readonly target?: string;
}

/** What the helpers need of the proxy endpoints. */
export interface ProxyLeaseApi {
  acquire(request: ProxyAcquireRequest, options?: CallOptions): Promise<ProxyAcquireReply>;
  report(request: ProxyReportRequest, options?: CallOptions): Promise<ProxyReportReply>;
  release(request: ProxyReleaseRequest, options?: CallOptions): Promise<EmptyReply>;
}

/** A held proxy lease: report how it went, and release it (at the latest when disposed). */
export class HeldProxyLease implements ProxyLeaseHandle, AsyncDisposable {
  readonly id: string;
  readonly proxy: string;
  readonly target: string;
  readonly expiresAt: string;
  readonly stats: ProxyStats;
  private readonly expiry = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout>;
  private released: Promise<void> | undefined;

  constructor(
    private readonly api: ProxyLeaseApi,
    reply: ProxyAcquireReply,
    /** Milliseconds until the lease expires, by the local clock. */
    ttlLeftMs: number,
    private readonly options?: CallOptions,
  ) {
    ({ id: this.id, proxy: this.proxy, target: this.target, expiresAt: this.expiresAt } = reply.lease);
    this.stats = reply.stats;
    this.timer = setTimeout(
      () => this.expiry.abort(new Error(`proxy lease ${this.id} on ${this.proxy} has expired`)),
      Math.max(0, ttlLeftMs),
    );
  }

  /** Aborted when the lease's TTL has run out (by the local clock, from when the acquire was sent). */
  get signal(): AbortSignal {
    return this.expiry.signal;
  }

  /**
   * Reports how the use of the proxy went: `rate_limited` and `banned` put
   * it in cooldown for the target (default the lease's own). `ok` is not
   * sent: the service records nothing for it.
   */
  async report(result: ProxyResult, target?: string): Promise<ProxyReportReply> {
    if (result === "ok") return {};
    return this.api.report({ leaseId: this.id, result, ...(target === undefined ? {} : { target }) }, this.options);
  }

  /** Releases the lease (idempotent; report before releasing: a released lease no longer resolves). */
  release(): Promise<void> {
    this.released ??= (async () => {
      clearTimeout(this.timer);
      await this.api.release({ leaseId: this.id }, this.options);
    })();
    return this.released;
  }

  /** `await using lease = await client.proxy.lease(...)` releases at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

/** Acquires a proxy lease as a {@link HeldProxyLease}. */
export async function leaseProxy(api: ProxyLeaseApi, request: ProxyAcquireRequest, options?: CallOptions): Promise<HeldProxyLease> {
  const sentAt = Date.now();
  const reply = await api.acquire(request, options);
  return new HeldProxyLease(api, reply, sentAt + request.ttlMs - Date.now(), options);
}

/**
 * Acquires a proxy lease, runs `fn` with it, reports the result `fn` returns
 * (`ok` is not sent: the service records nothing for it), and releases the
 * lease, in that order since a released lease can no longer be reported.
 * When `fn` throws, nothing is reported (a failure of the caller's code says
 * nothing about the proxy), the lease is released, and the error is
 * rethrown. A failed report or release is thrown (the lease then ends at its TTL).
 */
export async function withProxyLease<T>(
  api: ProxyLeaseApi,
  request: ProxyAcquireRequest,
  fn: (lease: ProxyLeaseHandle) => Promise<ProxyOutcome<T>>,
  options?: CallOptions,
): Promise<T> {
  const lease = await leaseProxy(api, request, options);
  let outcome: ProxyOutcome<T>;
  try {
    outcome = await fn(lease);
    await lease.report(outcome.result, outcome.target);
  } catch (e) {
    // The first error is the one that matters; an unreleased lease ends at its TTL anyway.
    await lease.release().catch(() => undefined);
    throw e;
  }
  await lease.release();
  return outcome.value;
}
