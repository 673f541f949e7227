/**
 * Blocking acquire on a real nats-server, two service instances on one
 * prefix: waiters are granted in the order they joined whichever instance
 * holds them, an acquire without `waitMs` is refused while they wait, and a
 * head waiter whose instance dies holds the lock up for one claim window.
 *
 * Which instance takes a request is the queue group's choice; the tests fix
 * it by letting instance A alone serve the first waiter, then stopping A's
 * endpoints (its runtime, with the parked waiter, keeps running) so that the
 * next requests reach B.
 */
import { describe, expect, it, vi } from "vitest";
import { uniquePrefix, type TestService } from "../support/nats.ts";
import {
  dataOf,
  expectFailure,
  expectLease,
  expectOk,
  lockClient,
  lockEvents,
  useLockHarness,
  type LockBody,
  type LockClient,
} from "../support/lock-fixtures.ts";
import type { Reply } from "../support/nats.ts";
import { collect, publishCommand } from "../support/durable.ts";

const h = useLockHarness();

const NAME = "queued";
/** The contract's bound on handing a freed lock to a waiter whose instance is up. */
const HANDOVER_MS = 50;

/** Waits until `lock.get` counts `n` live waiters. */
async function waitersAre(locks: LockClient, n: number): Promise<void> {
  await vi.waitFor(
    async () => {
      const body = expectOk(await locks.get({ name: NAME })) as LockBody & { waiters?: number };
      if (body.waiters !== n) throw new Error(`waiters ${String(body.waiters)}, want ${n}`);
    },
    { timeout: 10_000, interval: 10 },
  );
}

/** Starts A, lets it alone take the holder's lease and the first waiter, then leaves further requests to B. */
async function holderAndHeadOnA(prefix: string, overrides: { claimWindowMs: number }) {
  const a = await h.service(prefix, overrides);
  const client = lockClient(await h.connect(), prefix, 30_000);
  const holder = expectLease(await client.acquire({ name: NAME, owner: "holder", ttlMs: 20_000 }));
  const first = client.acquire({ name: NAME, owner: "w1", waitMs: 20_000 });
  await waitersAre(client, 1);
  const b = await h.service(prefix, overrides);
  // A stops taking requests; its runtime (and the parked w1) go on.
  void a.service.micro.stop().catch(() => undefined);
  // The unsubscription was written before this flush: once it returns, the server routes no request to A.
  await a.nc.flush();
  await vi.waitFor(() => expect(a.service.micro.busy).toBe(1), { timeout: 5000, interval: 10 });
  return { a, b, client, holder, first };
}

function parkedOn(service: TestService): number {
  return service.service.micro.busy;
}

describe("blocking acquire across two instances", () => {
  it("grants three waiters in the order they queued, and refuses an acquire without waitMs meanwhile", async () => {
    const prefix = uniquePrefix();
    const { a, b, client, holder, first } = await holderAndHeadOnA(prefix, { claimWindowMs: 1000 });
    const second = client.acquire({ name: NAME, owner: "w2", waitMs: 20_000, requestId: "w2-request" });
    await waitersAre(client, 2);
    const third = client.acquire({ name: NAME, owner: "w3", waitMs: 20_000 });
    await waitersAre(client, 3);
    // One waiter parked on A, two on B.
    expect(parkedOn(a)).toBe(1);
    expect(parkedOn(b)).toBe(2);

    const refused = await client.acquire({ name: NAME, owner: "impatient" });
    expectFailure(refused, 409, "LEASE_EXISTS", { owner: "holder", expiresAt: holder.expiresAt });
    // w2's requestId on another body (no waitMs) is another request: refused, w2 keeps its place, nothing is appended.
    const eventsBefore = (await lockEvents(b.service, NAME)).length;
    expectFailure(await client.acquire({ name: NAME, owner: "w2", requestId: "w2-request" }), 422, "REQUEST_ID_REUSED", {
      requestId: "w2-request",
    });
    expect(await lockEvents(b.service, NAME)).toHaveLength(eventsBefore);

    const order: string[] = [];
    const hand = async (pending: Promise<Reply<LockBody>>, next: string | undefined) => {
      const lease = expectLease(await pending);
      order.push(lease.owner);
      if (next !== undefined) {
        // While one holds it, an acquire without a place is refused.
        expectFailure(await client.acquire({ name: NAME, owner: "impatient" }), 409, "LEASE_EXISTS", { owner: lease.owner });
      }
      expectOk(await client.release({ name: NAME, etag: lease.etag }));
      return lease;
    };
    expectOk(await client.release({ name: NAME, etag: holder.etag }));
    const l1 = await hand(first, "w2");
    const l2 = await hand(second, "w3");
    const l3 = await hand(third, undefined);
    expect(order).toEqual(["w1", "w2", "w3"]);
    expect([l1.generation, l2.generation, l3.generation]).toEqual([2, 3, 4]);

    // The stream tells the same story: three places, each granted in turn.
    const events = await lockEvents(b.service, NAME);
    const queued = events.filter((e) => e.event.type === "LockWaiterQueued");
    expect(queued.map((e) => dataOf(e.event).owner)).toEqual(["w1", "w2", "w3"]);
    expect(queued[1]!.event.requestId).toBe("w2-request");
    const grants = events.filter((e) => e.event.type === "LockAcquired" && dataOf(e.event).waiterSeq !== undefined);
    expect(grants.map((e) => dataOf(e.event).waiterSeq)).toEqual(queued.map((e) => e.seq));
    await waitersAre(client, 0);
  });

  it("lets the next waiter have the lock one claim window after the release when the head waiter's instance died", async () => {
    const claimWindowMs = 300;
    const prefix = uniquePrefix();
    const { a, b, client, holder, first } = await holderAndHeadOnA(prefix, { claimWindowMs });
    // w1's request dies with A.
    first.catch(() => undefined);
    const second = client.acquire({ name: NAME, owner: "w2", waitMs: 20_000 });
    await waitersAre(client, 2);
    expect(parkedOn(b)).toBe(1);

    // A dies: its connection is gone, nothing it parked can claim.
    await a.nc.close();
    expectOk(await client.release({ name: NAME, etag: holder.etag }));
    const lease = expectLease(await second);
    expect(lease.owner).toBe("w2");

    // Measured on the instants the service recorded: the window was honoured, and not exceeded beyond a handover.
    const events = await lockEvents(b.service, NAME);
    const released = events.find((e) => e.event.type === "LockReleased")!;
    const granted = events.find((e) => e.event.type === "LockAcquired" && dataOf(e.event).owner === "w2")!;
    const delayMs = Date.parse(granted.event.at) - Date.parse(released.event.at);
    expect(delayMs).toBeGreaterThanOrEqual(claimWindowMs);
    expect(delayMs).toBeLessThanOrEqual(claimWindowMs + HANDOVER_MS);
    // What is left of A is stopped here: its connection is closed already, so the cleanup's drain would fail.
    await a.stop().catch(() => undefined);
  });

  it("answers a wait that runs out LEASE_EXISTS with waitedMs, and leaves its place behind", async () => {
    const prefix = uniquePrefix();
    await h.service(prefix);
    const client = lockClient(await h.connect(), prefix);
    const holder = expectLease(await client.acquire({ name: NAME, owner: "holder", ttlMs: 20_000 }));
    const started = Date.now();
    const reply = await client.acquire({ name: NAME, owner: "w1", waitMs: 200 });
    expectFailure(reply, 409, "LEASE_EXISTS", { owner: "holder", expiresAt: holder.expiresAt });
    expect(reply.body.error!.waitedMs).toBeGreaterThanOrEqual(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);
    await waitersAre(client, 0);
  });

  it("refuses waitMs above --max-wait-ms as BAD_REQUEST", async () => {
    const prefix = uniquePrefix();
    await h.service(prefix, { maxWaitMs: 1000 });
    const client = lockClient(await h.connect(), prefix);
    const reply = await client.acquire({ name: NAME, owner: "w", waitMs: 1001 });
    expectFailure(reply, 400, "BAD_REQUEST");
    expect(reply.body.error!.message).toContain("waitMs");
  });

  it("refuses a durable acquire that asks to wait as BAD_REQUEST (nobody waits for its answer)", async () => {
    const prefix = uniquePrefix();
    await h.service(prefix);
    const nc = await h.connect();
    const replies = collect(nc, `replies.${prefix}.durable`);
    await nc.flush();
    await publishCommand(
      nc,
      prefix,
      "lock.acquire",
      { name: NAME, owner: "w", waitMs: 1000, requestId: "durable-wait" },
      `replies.${prefix}.durable`,
    );
    await vi.waitFor(() => expect(replies.messages).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const body = replies.messages[0]!.json<{ error: { code: string; message: string } }>();
    expect(body.error.code).toBe("BAD_REQUEST");
    expect(body.error.message).toContain("waitMs");
    replies.stop();
  });

  it("answers its parked waiters UNAVAILABLE when it stops", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const client = lockClient(await h.connect(), prefix);
    expectLease(await client.acquire({ name: NAME, owner: "holder", ttlMs: 20_000 }));
    const waiting = client.acquire({ name: NAME, owner: "w1", waitMs: 20_000 });
    await waitersAre(client, 1);
    const stopped = performance.now();
    await svc.stop();
    expectFailure(await waiting, 503, "UNAVAILABLE");
    expect(performance.now() - stopped).toBeLessThan(5000);
  });
});
