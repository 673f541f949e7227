/**
 * A follower nobody waits on must resume by itself when its nats-server is
 * SIGKILLed and started again: the projections' stall watchdog only acts on
 * a follower someone awaits, and nats.js left alone may pause an ordered
 * consumer for up to its 30 s pull expiry after a reconnect.
 */
import { afterEach, describe, expect, inject, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { startLocalNatsServer, type LocalNatsCluster } from "../../src/cluster/local-cluster.ts";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { uniquePrefix } from "../support/nats.ts";

let server: LocalNatsCluster | undefined;
let nc: NatsConnection | undefined;
afterEach(async () => {
  await nc?.close();
  await server?.stop();
  nc = server = undefined;
});

/** Resolves once `done()` holds; fails the test with `what` after `withinMs`. */
async function until(done: () => boolean, withinMs: number, what: string): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("a JetStream follower whose connection drains", () => {
  it("ends without a restart, so a service stopping mid-start logs no re-created followers", async () => {
    nc = await connect({ servers: inject("natsUrl") });
    const subjects = new Subjects(uniquePrefix());
    const log = await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
    await log.append(`${subjects.prefix}.events.lock.a`, new Uint8Array([1]), { msgId: "m1", expectedLastSubjectSeq: 0 });
    const seen: number[] = [];
    const restarts: string[] = [];
    const following = await log.follow(1, (m) => seen.push(m.seq), { onRestart: (err) => restarts.push(err.message) });
    await until(() => seen.length === 1, 5000, "the first message");
    await nc.drain();
    // The subscription ended with the drain; what the follower does about it is decided on the next turns.
    await new Promise((resolve) => setImmediate(resolve));
    expect(restarts).toEqual([]);
    await following.stop();
  });
});

describe("a JetStream follower across a nats-server restart", () => {
  it("re-creates its consumer on the reconnect and delivers what is appended after, each message once", async () => {
    server = await startLocalNatsServer();
    nc = await connect({ servers: [...server.urls], maxReconnectAttempts: -1, reconnectTimeWait: 50 });
    const subjects = new Subjects(uniquePrefix());
    const log = await JetStreamEventLog.open(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
    const subject = `${subjects.prefix}.events.lock.a`;
    await log.append(subject, new Uint8Array([1]), { msgId: "m1", expectedLastSubjectSeq: 0 });
    const seen: number[] = [];
    const restarts: string[] = [];
    const following = await log.follow(1, (m) => seen.push(m.seq), { onRestart: (err) => restarts.push(err.message) });
    try {
      await until(() => seen.length === 1, 5000, "the first message");
      await server.kill(0, "SIGKILL");
      await server.restart(0);
      await until(() => nc!.isClosed() === false && restarts.length > 0, 5000, "a restart after the reconnect");
      await log.append(subject, new Uint8Array([2]), { msgId: "m2", expectedLastSubjectSeq: 1 });
      await until(() => seen.length === 2, 5000, "the message appended after the restart");
      expect(seen).toEqual([1, 2]);
      expect(restarts).toContain("the connection reconnected");
    } finally {
      await following.stop();
    }
  }, 30_000);
});
