/**
 * client.lock.watch against a real service: the lock's states from its
 * current one on, fed by the event stream (whichever client changed it), the
 * expiry the service writes no event for, and the end of the watch by
 * `break`/`return()` and by an AbortSignal, each within a bounded wait.
 */
import { describe, expect, it } from "vitest";
import type { LockWatch, LockWatchState } from "../../src/index.ts";
import { useClientHarness } from "./harness.ts";

const h = useClientHarness();

/** The next state of `watch`, failing after `ms` (a watch that hangs fails the test instead of timing it out). */
async function nextState(watch: LockWatch, ms = 5000): Promise<LockWatchState> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no state within ${ms} ms`)), ms)));
  try {
    const r = await Promise.race([watch.next(), timeout]);
    if (r.done === true) throw new Error("the watch ended");
    return r.value;
  } finally {
    clearTimeout(timer);
  }
}

describe("client.lock.watch", () => {
  it("starts with a never-held lock's free state, then follows acquire, renew, release and reset by any client", async () => {
    const { client, prefix } = await h.start();
    const other = await h.client(prefix);
    const watch = client.lock.watch("jobs");
    expect(await nextState(watch)).toEqual({ name: "jobs", lease: null, generation: 0, seq: 0, cause: "initial" });

    const { lease } = await other.lock.acquire({ name: "jobs", owner: "alice", ttlMs: 10_000 });
    const acquired = await nextState(watch);
    expect(acquired).toMatchObject({ name: "jobs", cause: "LockAcquired", generation: 1 });
    expect(acquired.lease).toEqual({ owner: "alice", generation: 1, ttlMs: 10_000, expiresAt: lease.expiresAt });

    const renewed = (await other.lock.renew({ name: "jobs", owner: "alice", etag: lease.etag, ttlMs: 20_000 })).lease;
    expect(await nextState(watch)).toMatchObject({ cause: "LockRenewed", lease: { ttlMs: 20_000, expiresAt: renewed.expiresAt } });
    await other.lock.release({ name: "jobs", etag: renewed.etag });
    const released = await nextState(watch);
    expect(released).toMatchObject({ cause: "LockReleased", lease: null, generation: 1 });
    expect(released.seq).toBeGreaterThan(acquired.seq);

    await other.lock.acquire({ name: "jobs", owner: "bob" });
    expect(await nextState(watch)).toMatchObject({ cause: "LockAcquired", lease: { owner: "bob", generation: 2 } });
    await other.lock.reset({ name: "jobs" });
    expect(await nextState(watch)).toMatchObject({ cause: "LockReset", lease: null, generation: 2 });

    // return() ends it: a pending next() resolves done, and so does every later one.
    const pending = watch.next();
    await watch.return();
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(await watch.next()).toEqual({ value: undefined, done: true });
  });

  it("starts with the current lease of a held lock, and yields a free state when the lease expires without an event", async () => {
    const { client } = await h.start();
    await client.lock.acquire({ name: "short", owner: "alice", ttlMs: 300 });
    const states: LockWatchState[] = [];
    for await (const state of client.lock.watch("short")) {
      states.push(state);
      if (state.lease === null) break;
    }
    expect(states.map((s) => s.cause)).toEqual(["LockAcquired", "expired"]);
    expect(states[0]!.lease).toMatchObject({ owner: "alice", generation: 1 });
    expect(states[1]).toMatchObject({ lease: null, generation: 1, seq: states[0]!.seq });
    // The service agrees: an expired lease counts as free.
    expect(await client.lock.get({ name: "short" })).toEqual({ lease: null, waiters: 0 });
  });

  it("keeps only the latest state for a reader that falls behind, when asked to", async () => {
    const { client } = await h.start();
    const watch = client.lock.watch("jobs", { latestOnly: true });
    await nextState(watch);
    const { lease } = await client.lock.acquire({ name: "jobs", owner: "alice", ttlMs: 10_000 });
    let etag = lease.etag;
    for (let i = 0; i < 3; i++) etag = (await client.lock.renew({ name: "jobs", owner: "alice", etag })).lease.etag;
    await client.lock.release({ name: "jobs", etag });
    // Wait until the release has reached the watch, then read: one state, the latest.
    const deadline = performance.now() + 5000;
    while (watch.current.cause !== "LockReleased" && performance.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    expect(await nextState(watch)).toMatchObject({ cause: "LockReleased", lease: null, generation: 1 });
    await watch.return();
  });

  it("ends when its AbortSignal aborts, before or while it waits", async () => {
    const { client } = await h.start();
    const controller = new AbortController();
    const watch = client.lock.watch("jobs", { signal: controller.signal });
    await nextState(watch);
    const pending = watch.next();
    controller.abort();
    expect(await pending).toEqual({ value: undefined, done: true });

    const aborted = client.lock.watch("jobs", { signal: AbortSignal.abort() });
    expect(await aborted.next()).toEqual({ value: undefined, done: true });
  });
});
