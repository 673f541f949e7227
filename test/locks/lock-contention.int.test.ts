/**
 * Mutual exclusion under contention: two service instances on one stream and
 * prefix (one queue group), 64 clients on 8 connections racing for one lock
 * over many rounds. Never two holders at once, judged both from the replies
 * and from the lock's history in the stream.
 */
import { describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { uniquePrefix } from "../support/nats.ts";
import {
  dataOf,
  expectFailure,
  expectLease,
  expectOk,
  lockClient,
  lockEvents,
  srv,
  useLockHarness,
  waitUntilFree,
  type Lease,
} from "../support/lock-fixtures.ts";

const h = useLockHarness();

const CONNECTIONS = 8;
const CLIENTS_PER_CONNECTION = 8;
const ROUNDS = 30;
/** Every few rounds the winner lets its lease expire instead of releasing it. */
const EXPIRE_EVERY = 6;
const NAME = "the-one-lock";

interface Holding {
  readonly lease: Lease;
  /** When the winner learnt it holds the lock. */
  readonly start: number;
  /** When the holder stopped holding it: its release was answered, or its lease expired. */
  readonly end: number;
}

describe("two instances, 64 contenders, one lock", () => {
  it("never grants the lock to two holders at once", async () => {
    const prefix = uniquePrefix();
    // A generous ttl so a slow round never sees a lease expire mid-round; expiry rounds shorten it by a renew.
    const a = await h.service(prefix, { lockTtlMs: 5000, maxTtlMs: 5000 });
    const b = await h.service(prefix, { lockTtlMs: 5000, maxTtlMs: 5000 });
    const connections: NatsConnection[] = [];
    for (let i = 0; i < CONNECTIONS; i++) connections.push(await h.connect());
    const clients = connections.flatMap((nc, c) =>
      Array.from({ length: CLIENTS_PER_CONNECTION }, (_, k) => ({ owner: `client-${c}-${k}`, locks: lockClient(nc, prefix) })),
    );
    const observer = lockClient(await h.connect(), prefix);

    const holdings: Holding[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const replies = await Promise.all(
        clients.map(async ({ owner, locks }) => {
          const reply = await locks.acquire({ name: NAME, owner });
          return { owner, locks, reply, at: Date.now() };
        }),
      );
      const winners = replies.filter((r) => r.reply.status === undefined);
      expect(winners, `round ${round}`).toHaveLength(1);
      const winner = winners[0]!;
      const lease = expectLease(winner.reply);
      expect(lease.owner).toBe(winner.owner);
      for (const r of replies) {
        if (r !== winner) expectFailure(r.reply, 409, "LEASE_EXISTS", { owner: winner.owner, expiresAt: lease.expiresAt });
      }

      if ((round + 1) % EXPIRE_EVERY === 0) {
        // Shorten the lease and let it run out; the next round starts once the lock is free.
        const short = expectLease(await winner.locks.renew({ name: NAME, owner: winner.owner, etag: lease.etag, ttlMs: 50 }));
        await waitUntilFree(observer, NAME);
        holdings.push({ lease, start: winner.at, end: Date.parse(short.expiresAt) });
      } else {
        expectOk(await winner.locks.release({ name: NAME, etag: lease.etag }));
        holdings.push({ lease, start: winner.at, end: Date.now() });
      }
    }

    // From the replies: holdings do not overlap and generations rise by one.
    for (let i = 1; i < holdings.length; i++) {
      const prev = holdings[i - 1]!;
      const next = holdings[i]!;
      expect(next.start, `holding ${i} starts before ${i - 1} ended`).toBeGreaterThanOrEqual(prev.end);
      expect(next.lease.generation).toBe(prev.lease.generation + 1);
    }
    expect(holdings[0]!.lease.generation).toBe(1);

    // From the stream: fold the lock's history and check every acquisition was legal when decided.
    const events = await lockEvents(a.service, NAME);
    let generation = 0;
    let held: { owner: string; generation: number; expiresAtMs: number } | null = null;
    const acquiredBy: string[] = [];
    for (const { event, seq } of events) {
      const d = dataOf(event);
      const at = Date.parse(event.at);
      switch (event.type) {
        case "LockAcquired":
          expect(d.generation, `seq ${seq}`).toBe(generation + 1);
          if (held !== null) {
            expect(held.expiresAtMs, `seq ${seq} acquired a live lease`).toBeLessThanOrEqual(at);
            expect(d.previousOwner).toBe(held.owner);
          } else {
            expect(d.previousOwner).toBe("");
          }
          generation = d.generation as number;
          held = { owner: d.owner as string, generation, expiresAtMs: Date.parse(d.expiresAt as string) };
          acquiredBy.push(held.owner);
          break;
        case "LockRenewed":
          expect(held).not.toBeNull();
          expect(d).toMatchObject({ owner: held!.owner, generation: held!.generation });
          held = { ...held!, expiresAtMs: Date.parse(d.expiresAt as string) };
          break;
        case "LockReleased":
          expect(held).not.toBeNull();
          expect(d).toMatchObject({ owner: held!.owner, generation: held!.generation });
          held = null;
          break;
        default:
          throw new Error(`unexpected event ${event.type} at seq ${seq}`);
      }
    }
    expect(acquiredBy).toEqual(holdings.map((x) => x.lease.owner));
    const renewals = Math.floor(ROUNDS / EXPIRE_EVERY);
    expect(events).toHaveLength(ROUNDS + renewals + (ROUNDS - renewals));

    // Both instances took part: the queue group spread the requests over them.
    const acquires = await Promise.all(
      [a, b].map(async (svc) => {
        const stats = await srv(svc.nc, "STATS", svc.service.micro.id);
        return stats.endpoints!.find((e) => e.subject === `${prefix}.v1.lock.acquire`)!.num_requests;
      }),
    );
    expect(acquires[0]).toBeGreaterThan(0);
    expect(acquires[1]).toBeGreaterThan(0);
    expect(acquires[0]! + acquires[1]!).toBe(ROUNDS * clients.length);
  });
});
