/**
 * Blocking acquire through the typed client: `lock.acquire` with `waitMs`
 * waits for the holder's release (longer than the client's own request
 * timeout), an AbortSignal stops waiting at once, and the keeper and
 * `withLock` wait when asked to.
 */
import { describe, expect, it, vi } from "vitest";
import { LeaseExistsError } from "../../src/index.ts";
import { expectRejects, useClientHarness } from "./harness.ts";
import { watchLoopDelay } from "../support/loop-delay.ts";

const h = useClientHarness();

describe("client: waiting for a lock", () => {
  it("acquire with waitMs is granted when the holder releases, even past the client's request timeout", async () => {
    const { client, prefix } = await h.start({}, { timeoutMs: 300 });
    const holder = await client.lock.acquire({ name: "job", owner: "holder" });
    const other = await h.client(prefix, { timeoutMs: 300 });
    const waiting = other.lock.acquire({ name: "job", owner: "waiter", waitMs: 5000 });
    await vi.waitFor(async () => expect((await client.lock.get({ name: "job" })).waiters).toBe(1), { interval: 10 });
    // Released after the client's own 300 ms timeout would have run out: the wait's timeout covers waitMs.
    await new Promise((resolve) => setTimeout(resolve, 400));
    await client.lock.release({ name: "job", etag: holder.lease.etag });
    const { lease } = await waiting;
    expect(lease).toMatchObject({ owner: "waiter", generation: 2 });
  });

  it("acquire whose wait runs out rejects with LeaseExistsError carrying waitedMs", async () => {
    const { client } = await h.start();
    await client.lock.acquire({ name: "job", owner: "holder" });
    const error = await expectRejects(
      client.lock.acquire({ name: "job", owner: "waiter", waitMs: 150 }),
      LeaseExistsError,
      "LEASE_EXISTS",
      409,
    );
    expect(error.details).toMatchObject({ owner: "holder" });
    expect(error.details.waitedMs).toBeGreaterThanOrEqual(150);
  });

  it("an AbortSignal stops the wait at once with the signal's reason", async () => {
    const { client } = await h.start();
    await client.lock.acquire({ name: "job", owner: "holder" });
    const controller = new AbortController();
    const waiting = client.lock.acquire({ name: "job", owner: "waiter", waitMs: 20_000 }, { signal: controller.signal });
    await vi.waitFor(async () => expect((await client.lock.get({ name: "job" })).waiters).toBe(1), { interval: 10 });
    const loop = watchLoopDelay();
    const aborted = performance.now();
    controller.abort(new Error("no longer needed"));
    await expect(waiting).rejects.toThrow("no longer needed");
    expect(performance.now() - aborted).toBeLessThan(100 + loop.stop());
    // An already aborted signal sends nothing.
    await expect(client.lock.acquire({ name: "job", owner: "late", waitMs: 1000 }, { signal: controller.signal })).rejects.toThrow(
      "no longer needed",
    );
  });

  it("keep and withLock wait for the lock when given waitMs, in the order they asked", async () => {
    const { client, prefix } = await h.start();
    const first = await client.lock.keep({ name: "job", owner: "first", ttlMs: 2000 });
    const second = await h.client(prefix);
    const order: string[] = [];
    const kept = second.lock.keep({ name: "job", owner: "second", ttlMs: 2000, waitMs: 10_000 }).then((k) => {
      order.push("second");
      return k;
    });
    await vi.waitFor(async () => expect((await client.lock.get({ name: "job" })).waiters).toBe(1), { interval: 10 });
    const third = await h.client(prefix);
    const scoped = third.lock.withLock({ name: "job", owner: "third", ttlMs: 2000, waitMs: 10_000 }, (keeper) => {
      order.push("third");
      return Promise.resolve(keeper.generation);
    });
    await vi.waitFor(async () => expect((await client.lock.get({ name: "job" })).waiters).toBe(2), { interval: 10 });

    await first.close();
    const keeper = await kept;
    expect([keeper.held, keeper.generation]).toEqual([true, 2]);
    await keeper.close();
    expect(await scoped).toBe(3);
    expect(order).toEqual(["second", "third"]);
  });
});
