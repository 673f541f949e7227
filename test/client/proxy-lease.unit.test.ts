/**
 * A held proxy lease's signal on fake timers (Date.now faked too): it aborts
 * exactly when the TTL has run out by the local clock, counted from when the
 * acquire was sent (not from when the reply came), and not a millisecond
 * before; a released lease never aborts.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { withProxyLease, leaseProxy, type ProxyLeaseApi } from "../../src/client/proxy-lease.ts";
import type { ProxyAcquireReply, ProxyAcquireRequest } from "../../src/contract/messages.ts";

const T0 = 1_700_000_000_000;
const REPLY_AFTER_MS = 40;

/** An API whose acquire answers REPLY_AFTER_MS after it is sent; it records releases. */
function fakeApi(released: string[]): ProxyLeaseApi {
  return {
    acquire: (request: ProxyAcquireRequest) =>
      new Promise<ProxyAcquireReply>((resolve) =>
        setTimeout(
          () =>
            resolve({
              lease: { id: "l1", proxy: "p1", target: request.target ?? "", expiresAt: new Date(Date.now() + request.ttlMs).toISOString() },
              stats: { considered: 1, unhealthy: 0, inCooldown: 0, atCapacity: 0 },
            }),
          REPLY_AFTER_MS,
        ),
      ),
    report: () => Promise.resolve({}),
    release: ({ leaseId }) => {
      released.push(leaseId);
      return Promise.resolve({});
    },
  };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("a held proxy lease", () => {
  it("aborts its signal exactly a TTL after the acquire was sent", async () => {
    const released: string[] = [];
    let abortedAt: number | undefined;
    const done = withProxyLease(fakeApi(released), { ttlMs: 300 }, async (lease) => {
      await new Promise((resolve) => lease.signal.addEventListener("abort", resolve, { once: true }));
      abortedAt = Date.now();
      return { result: "ok", value: lease.signal.aborted };
    });
    await vi.advanceTimersByTimeAsync(299);
    expect(abortedAt).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(abortedAt).toBe(T0 + 300);
    expect(await done).toBe(true);
    expect(released).toEqual(["l1"]);
  });

  it("never aborts once released", async () => {
    const lease = await Promise.all([leaseProxy(fakeApi([]), { ttlMs: 300 }), vi.advanceTimersByTimeAsync(REPLY_AFTER_MS)]).then(
      ([l]) => l,
    );
    await lease.release();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(lease.signal.aborted).toBe(false);
  });
});
