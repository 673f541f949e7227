/**
 * A requestId names one request, tried on `leasehold serve` run as a process:
 * the same request sent again gets the first answer (on request/reply, and a
 * durable command published again after the first copy was carried out);
 * a requestId reused with another body, op or entity is refused
 * `REQUEST_ID_REUSED` on both paths, and nothing changes; so are requests
 * that reuse it while the first is still being carried out.
 */
import { describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { ask, durable } from "./default-client.ts";
import { defer, freePort, leasehold, tempDir, waitForLog, type Proc } from "../cli/cli-process.ts";

/** `leasehold serve` on its own nats-server, and a connection to it. */
async function serve(): Promise<{ nc: NatsConnection; lastSeq: () => Promise<number>; port: number; cwd: string; proc: Proc }> {
  const cwd = tempDir("request-ids");
  const port = await freePort();
  const proc = leasehold(["serve", "--nats-port", String(port), "--http", "off"], { cwd });
  await waitForLog(proc, "leasehold serving");
  const nc = await connect({ servers: `nats://127.0.0.1:${port}`, maxReconnectAttempts: 0 });
  defer(() => nc.close());
  const jsm = await jetstreamManager(nc);
  return { nc, port, cwd, proc, lastSeq: async () => (await jsm.streams.info("LEASEHOLD_EVENTS")).state.last_seq };
}

describe("a requestId", () => {
  it("is carried out once when requests that share it come at once", async () => {
    const { nc, lastSeq } = await serve();
    const before = await lastSeq();
    const bodies: [string, Record<string, unknown>][] = [
      ...Array.from({ length: 8 }, (_, i): [string, Record<string, unknown>] => [
        "lock.acquire",
        { name: `c${i}`, owner: "alice", requestId: "c1" },
      ]),
      ["proxy.register", { proxy: "p", maxLeases: 1, requestId: "c1" }],
      ["session.open", { owner: "alice", ttlMs: 60_000, requestId: "c1" }],
    ];
    const answers = await Promise.all(bodies.map(([op, body]) => ask(nc, op, body)));
    const carriedOut = answers.flatMap((answer, i) => (answer.error === undefined ? [i] : []));
    expect(carriedOut).toHaveLength(1);
    for (const answer of answers.filter((_, i) => i !== carriedOut[0])) expect(answer).toHaveProperty("error.code", "REQUEST_ID_REUSED");
    expect(await lastSeq()).toBe(before + 1);
    // The one carried out, asked again (its answer lost, say), gets its first answer.
    const [op, body] = bodies[carriedOut[0]!]!;
    expect(await ask(nc, op, body)).toEqual(answers[carriedOut[0]!]);
  });

  it("gets the first answer when its request comes again, and REQUEST_ID_REUSED when another request reuses it", async () => {
    const { nc, lastSeq, port, cwd, proc } = await serve();

    // Request/reply: the same request again (keys in another order) is the first answer; another body is refused.
    const first = await ask(nc, "lock.acquire", { name: "a", owner: "alice", requestId: "r1" });
    expect(first).toHaveProperty("lease.owner", "alice");
    expect(await ask(nc, "lock.acquire", { requestId: "r1", owner: "alice", name: "a" })).toEqual(first);
    const appended = await lastSeq();
    for (const [op, body] of [
      ["lock.acquire", { name: "a", owner: "mallory", requestId: "r1" }], // another body
      ["lock.acquire", { name: "b", owner: "alice", requestId: "r1" }], // another entity
      ["lock.release", { name: "a", etag: (first.lease as { etag: string }).etag, requestId: "r1" }], // another op
      ["proxy.register", { proxy: "p", maxLeases: 1, requestId: "r1" }], // another kind
    ] as const) {
      expect(await ask(nc, op, body), `${op} ${JSON.stringify(body)}`).toEqual({
        error: { code: "REQUEST_ID_REUSED", message: expect.stringMatching(/^requestId "r1" was used/), requestId: "r1" },
      });
    }
    expect(await lastSeq()).toBe(appended);
    expect(await ask(nc, "lock.get", { name: "a" })).toHaveProperty("lease.owner", "alice");

    // Durable: the first copy is carried out; published again after that, it gets the same answer (not LEASE_EXISTS).
    const once = await durable(nc, "lock.acquire", { name: "d", owner: "alice", requestId: "d1" });
    expect(once).toHaveProperty("lease.owner", "alice");
    expect(await durable(nc, "lock.acquire", { name: "d", owner: "alice", requestId: "d1" })).toEqual(once);
    // And by request/reply, the same request is the same answer whichever path it took first.
    expect(await ask(nc, "lock.acquire", { name: "d", owner: "alice", requestId: "d1" })).toEqual(once);
    const afterDurable = await lastSeq();
    expect(await durable(nc, "lock.acquire", { name: "d", owner: "bob", requestId: "d1" })).toMatchObject({
      error: { code: "REQUEST_ID_REUSED", requestId: "d1" },
    });
    expect(await lastSeq()).toBe(afterDurable);

    // After a restart the service tells a retry from a reuse the same way (it folds the stream again).
    proc.child.kill("SIGTERM");
    await proc.exited;
    const again = leasehold(["serve", "--nats-port", String(port), "--http", "off"], { cwd });
    await waitForLog(again, "leasehold serving");
    const nc2 = await connect({ servers: `nats://127.0.0.1:${port}`, maxReconnectAttempts: 0 });
    defer(() => nc2.close());
    expect(await ask(nc2, "lock.acquire", { name: "a", owner: "alice", requestId: "r1" })).toEqual(first);
    expect(await ask(nc2, "lock.acquire", { name: "a", owner: "mallory", requestId: "r1" })).toHaveProperty(
      "error.code",
      "REQUEST_ID_REUSED",
    );
  });
});
