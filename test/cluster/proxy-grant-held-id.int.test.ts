/**
 * On a three-node cluster the stream's leader checks a message id when it
 * takes the message, and keeps the id of a copy it took but did not store
 * (refused by its expected sequence, or still in flight) as a duplicate "at
 * sequence 0". A proxy grant's id is the same on every proxy, so an instance
 * that meets such a duplicate for a copy it never sent cannot know on which
 * proxy that copy may still land: it must not grant under a variant id (the
 * request would be granted twice if the copy lands). Here the copy is one the
 * leader refused, published by hand as another instance would have.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFailed, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import { headers, type NatsConnection } from "@nats-io/nats-core";
import { jetstream } from "@nats-io/jetstream";
import { startLocalCluster, type LocalNatsCluster } from "../../src/cluster/local-cluster.ts";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { requestMsgId, requestOfMsgId } from "../../src/events/envelope.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { resolveConfig } from "../../src/config.ts";
import { startService } from "../../src/service/start-service.ts";
import { quietLogger, uniquePrefix } from "../support/nats.ts";
import { proxyClient } from "../support/proxy-fixtures.ts";

const ACQUIRE = { ttlMs: 60_000, target: "t", requestId: "r1" };

describe("a proxy grant whose id the cluster's leader holds for a copy this instance never sent", () => {
  let cluster: LocalNatsCluster;
  const connections: NatsConnection[] = [];
  const open = async (name: string) => {
    const nc = await connect({ servers: [...cluster.urls], name });
    connections.push(nc);
    return nc;
  };
  beforeAll(async () => {
    cluster = await startLocalCluster();
  });
  afterAll(async () => {
    for (const nc of connections) await nc.close();
    await cluster?.stop();
  });

  /** Starts a service instance on `prefix` at three replicas, on its own connection. */
  const instance = async (prefix: string) => {
    const service = await startService({
      nc: await open(`instance-${prefix}`),
      config: resolveConfig({ prefix, nats: cluster.urls.join(","), replicas: 3, requestTimeoutMs: 2000 }),
      logger: quietLogger,
    });
    return service;
  };

  /** The msg ids of the stream's `ProxyLeaseGranted` events that carry `requestId`. */
  const grants = async (nc: NatsConnection, subjects: Subjects, requestId: string) => {
    const log = await JetStreamEventLog.attach(nc, { stream: subjects.eventStream, subjects: subjects.allEvents, dedupWindowMs: 120_000 });
    const found: string[] = [];
    for await (const m of log.readStream({ filter: subjects.eventsOfKind("proxy") })) {
      const event = JSON.parse(new TextDecoder().decode(m.payload)) as { type: string; requestId?: string };
      if (event.type === "ProxyLeaseGranted" && event.requestId === requestId) found.push(m.msgId ?? "");
    }
    return found;
  };

  /** Registers p1 and p2 on `prefix` (retried while a stream just created on the cluster is not reachable yet). */
  const register = async (nc: NatsConnection, prefix: string) => {
    const proxies = proxyClient(nc, prefix, 5000);
    for (const proxy of ["p1", "p2"])
      await vi.waitFor(async () => expect((await proxies.call("register", { proxy, maxLeases: 2 })).status).toBeUndefined(), {
        timeout: 15_000,
        interval: 200,
      });
    return proxies;
  };

  it("is left in doubt by both instances, and nothing is granted under a variant id", async () => {
    // Each step's end, so that a run past the test's deadline (once in .ci/run, 60 s against 15-18 s) names the step that took it.
    const started = performance.now();
    const steps: string[] = [];
    const done = (step: string) => steps.push(`${step} at ${Math.round(performance.now() - started)} ms`);
    onTestFailed(() => console.error(`steps done: ${steps.join("; ") || "none"}`));
    const client = await open("client");
    // The request's fingerprint, from the same request carried out on a prefix of its own.
    const scratch = new Subjects(uniquePrefix());
    const scratchService = await instance(scratch.prefix);
    done("scratch instance started");
    let fingerprint: string;
    try {
      const scratchProxies = await register(client, scratch.prefix);
      done("scratch proxies registered");
      expect((await scratchProxies.call("acquire", ACQUIRE)).status).toBeUndefined();
      const [msgId] = await grants(client, scratch, "r1");
      done("scratch grant read");
      fingerprint = requestOfMsgId(msgId!)!.fingerprint;
    } finally {
      await scratchService.stop();
      done("scratch instance stopped");
    }

    const subjects = new Subjects(uniquePrefix());
    const a = await instance(subjects.prefix);
    const b = await instance(subjects.prefix);
    done("instances a and b started");
    try {
      await register(client, subjects.prefix);
      done("proxies registered");
      // Another instance's copy of the grant on p1, which the leader takes and then refuses by its expected sequence.
      const msgId = requestMsgId(subjects.eventsOfKind("proxy"), "grant", "r1", fingerprint);
      const h = headers();
      h.set("Nats-Msg-Id", msgId);
      h.set("Nats-Expected-Last-Subject-Sequence", "999999");
      await expect(jetstream(client).publish(subjects.event("proxy", "p1"), "{}", { headers: h, timeout: 5000 })).rejects.toThrow(
        /wrong last sequence/,
      );
      done("the held copy published");
      // Both instances meet the held id at sequence 0, whichever answers: no reply (in doubt), never a grant.
      const retries = proxyClient(client, subjects.prefix, 3000);
      for (let i = 0; i < 4; i++) await expect(retries.call("acquire", ACQUIRE)).rejects.toThrow(/timeout/i);
      done("four retries left in doubt");
      expect(await grants(client, subjects, "r1")).toEqual([]);
      done("no grant read");
    } finally {
      await a.stop();
      await b.stop();
      done("instances stopped");
    }
  }, 120_000);
});
