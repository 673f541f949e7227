/**
 * What a verified answer (a reply or refusal that appends nothing) asks the
 * server on a one-replica stream: once the kind's follower has everything,
 * one look for an event of the kind past the follower's position (a short
 * "no message" back), and never the subject's last message, which carries
 * the whole event (7 KB for a route first placed with 1,000 candidates).
 */
import { describe, expect, it, vi } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { Subjects } from "../../src/contract/subjects.ts";
import { uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectLease, lockClient, useLockHarness } from "../support/lock-fixtures.ts";

const h = useLockHarness();

/**
 * Counts the requests to one JetStream API subject whose body names `field`,
 * on `nc`, so they arrive in order with its replies.
 */
function countRequests(nc: NatsConnection, subject: string, field: string): () => number {
  let n = 0;
  nc.subscribe(subject, {
    callback: (_err, m) => {
      if (field in (m.json<Record<string, unknown>>() ?? {})) n++;
    },
  });
  return () => n;
}

describe("a verified refusal on a one-replica stream", () => {
  it("asks for the kind's events past the follower, not the subject's last message", async () => {
    const prefix = uniquePrefix();
    await h.service(prefix);
    const client = await h.connect();
    const stream = new Subjects(prefix).eventStream;
    const messageGets = countRequests(client, `$JS.API.STREAM.MSG.GET.${stream}`, "last_by_subj");
    const kindLooks = countRequests(client, `$JS.API.STREAM.MSG.GET.${stream}`, "next_by_subj");
    await client.flush();
    const locks = lockClient(client, prefix);
    expectLease(await locks.acquire({ name: "n", owner: "a" }));

    const refuse = async () => expectFailure(await locks.acquire({ name: "n", owner: "b" }), 409, "LEASE_EXISTS");
    // Until the follower has delivered the holder's own event, the stream holds one past it and the last is asked.
    await vi.waitFor(
      async () => {
        const before = messageGets();
        await refuse();
        expect(messageGets()).toBe(before);
      },
      { timeout: 5000, interval: 20 },
    );

    const [gets, looks] = [messageGets(), kindLooks()];
    for (let i = 0; i < 20; i++) await refuse();
    expect(messageGets() - gets).toBe(0);
    // Each refusal was verified: one look each, as they came one at a time.
    expect(kindLooks() - looks).toBe(20);
  });
});
