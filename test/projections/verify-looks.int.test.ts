/**
 * What a verified answer (a reply or refusal that appends nothing) asks the
 * server on a one-replica stream: once the kind's follower has everything,
 * one look at the follower's own consumer, and never the subject's last
 * message, which carries the whole event (7 KB for a route first placed
 * with 1,000 candidates).
 */
import { describe, expect, it, vi } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { Subjects } from "../../src/contract/subjects.ts";
import { uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectLease, lockClient, useLockHarness } from "../support/lock-fixtures.ts";

const h = useLockHarness();

/** Counts the requests made to one JetStream API subject (wildcards allowed), on `nc`, so they arrive in order with its replies. */
function countRequests(nc: NatsConnection, subject: string): () => number {
  let n = 0;
  nc.subscribe(subject, {
    callback: () => {
      n++;
    },
  });
  return () => n;
}

describe("a verified refusal on a one-replica stream", () => {
  it("asks the follower's consumer, not the subject's last message", async () => {
    const prefix = uniquePrefix();
    await h.service(prefix);
    const client = await h.connect();
    const stream = new Subjects(prefix).eventStream;
    const messageGets = countRequests(client, `$JS.API.STREAM.MSG.GET.${stream}`);
    const consumerLooks = countRequests(client, `$JS.API.CONSUMER.INFO.${stream}.>`);
    await client.flush();
    const locks = lockClient(client, prefix);
    expectLease(await locks.acquire({ name: "n", owner: "a" }));

    const refuse = async () => expectFailure(await locks.acquire({ name: "n", owner: "b" }), 409, "LEASE_EXISTS");
    // Until the follower has delivered the holder's own event, the consumer cannot vouch for it and the leader is asked.
    await vi.waitFor(
      async () => {
        const before = messageGets();
        await refuse();
        expect(messageGets()).toBe(before);
      },
      { timeout: 5000, interval: 20 },
    );

    const [gets, looks] = [messageGets(), consumerLooks()];
    for (let i = 0; i < 20; i++) await refuse();
    expect(messageGets() - gets).toBe(0);
    // Each refusal was verified: one consumer look each, as they came one at a time.
    expect(consumerLooks() - looks).toBe(20);
  });
});
