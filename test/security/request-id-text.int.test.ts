/**
 * A requestId is any string of 1-128 characters, and it travels in the
 * `Nats-Msg-Id` header of the event it causes, where a line break may not go.
 * Tried on `leasehold serve` run as a process: a requestId holding CR or LF
 * gets its answer (not UNAVAILABLE, which a client retries for ever and a
 * durable command was redelivered for ever on), the same request again gets
 * the first answer, also after a restart, and another request with it is
 * `REQUEST_ID_REUSED`.
 */
import { describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { ask, durable } from "./default-client.ts";
import { defer, restartLocalServe, startLocalServe } from "../cli/cli-process.ts";

async function opened(url: string): Promise<NatsConnection> {
  const nc = await connect({ servers: url, maxReconnectAttempts: 0 });
  defer(() => nc.close());
  return nc;
}

/** requestIds a header line could not carry as they are, and their look-alikes that it could. */
const IDS = ["a\nb", "a\r\nNats-Expected-Last-Subject-Sequence: 0", "\n", "a%0Ab", "%a\rb%"];

describe("a requestId with a line break", () => {
  it("is answered, and the same request again gets the first answer on both paths and after a restart", async () => {
    let serve = await startLocalServe("request-id-text");
    let nc = await opened(serve.url);
    const first = new Map<string, Record<string, unknown>>();
    for (const [i, requestId] of IDS.entries()) {
      const body = { name: `lock-${i}`, owner: "alice", requestId };
      const answer = await ask(nc, "lock.acquire", body);
      expect(answer, JSON.stringify(requestId)).toHaveProperty("lease.owner", "alice");
      expect(await ask(nc, "lock.acquire", body)).toEqual(answer);
      expect(await ask(nc, "lock.acquire", { ...body, owner: "mallory" })).toMatchObject({
        error: { code: "REQUEST_ID_REUSED", requestId },
      });
      first.set(requestId, answer);
      // The durable path: a fresh command, then the same one published again.
      const durableBody = { name: `durable-${i}`, owner: "bob", requestId: `${requestId}!` };
      const carried = await durable(nc, "lock.acquire", durableBody);
      expect(carried, JSON.stringify(requestId)).toHaveProperty("lease.owner", "bob");
      expect(await durable(nc, "lock.acquire", durableBody)).toEqual(carried);
    }

    serve = await restartLocalServe(serve);
    nc = await opened(serve.url);
    for (const [i, requestId] of IDS.entries()) {
      expect(await ask(nc, "lock.acquire", { name: `lock-${i}`, owner: "alice", requestId })).toEqual(first.get(requestId));
      expect(await ask(nc, "lock.acquire", { name: `lock-${i}`, owner: "carol", requestId })).toMatchObject({
        error: { code: "REQUEST_ID_REUSED" },
      });
    }
  });
});
