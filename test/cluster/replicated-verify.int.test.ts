/**
 * On a replicated stream the follower's consumer (one replica) may sit on a
 * server that has not yet applied what the leader acknowledged, so its
 * "nothing pending" does not vouch for the leader: a verified answer asks
 * the leader for the subject's last message instead. A one-replica stream
 * on the same cluster is the control.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { startLocalCluster, type LocalNatsCluster } from "../../src/cluster/local-cluster.ts";
import { JetStreamEventLog } from "../../src/events/jetstream-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { resolveConfig } from "../../src/config.ts";
import { startService } from "../../src/service/start-service.ts";
import { quietLogger, uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectLease, lockClient } from "../support/lock-fixtures.ts";

describe("a follower of a replicated stream", () => {
  let cluster: LocalNatsCluster;
  let nc: NatsConnection;
  beforeAll(async () => {
    cluster = await startLocalCluster();
    nc = await connect({ servers: [...cluster.urls], name: "leasehold-test" });
  });
  afterAll(async () => {
    await nc?.close();
    await cluster?.stop();
  });

  async function followerAt(replicas: number): Promise<{ caughtUp: boolean; vouchesForLeader: boolean }> {
    const subjects = new Subjects(uniquePrefix());
    const log = await JetStreamEventLog.open(nc, {
      stream: subjects.eventStream,
      subjects: subjects.allEvents,
      dedupWindowMs: 60_000,
      replicas,
    });
    const subject = `${subjects.prefix}.events.lock.a`;
    // A stream just created on a cluster may not yet be reachable from the server this connection is on: the
    // append is then refused with "no stream answers" (nothing stored), and is sent again; its message id keeps it one.
    await vi.waitFor(() => log.append(subject, new TextEncoder().encode("{}"), { expectedLastSubjectSeq: 0, msgId: "one" }), {
      timeout: 10_000,
      interval: 50,
    });
    const seen: number[] = [];
    const following = await log.follow(1, (m) => seen.push(m.seq));
    try {
      await vi.waitFor(() => expect(seen).toEqual([1]), { timeout: 10_000, interval: 20 });
      let caughtUp = false;
      await vi.waitFor(async () => expect((caughtUp = await following.caughtUp(5000))).toBe(true), { timeout: 10_000, interval: 20 });
      return { caughtUp, vouchesForLeader: following.vouchesForLeader };
    } finally {
      await following.stop();
      await (await jetstreamManager(nc)).streams.delete(subjects.eventStream);
    }
  }

  it("says it is caught up, but vouches for the leader only at one replica", async () => {
    expect(await followerAt(1)).toEqual({ caughtUp: true, vouchesForLeader: true });
    expect(await followerAt(3)).toEqual({ caughtUp: true, vouchesForLeader: false });
  });

  it("makes a verified refusal ask the leader for the subject's last message", async () => {
    const prefix = uniquePrefix();
    const config = resolveConfig({ prefix, nats: cluster.urls.join(","), replicas: 3 });
    const service = await startService({ nc, config, logger: quietLogger });
    try {
      const stream = new Subjects(prefix).eventStream;
      let gets = 0;
      nc.subscribe(`$JS.API.STREAM.MSG.GET.${stream}`, {
        callback: () => {
          gets++;
        },
      });
      await nc.flush();
      const locks = lockClient(nc, prefix);
      expectLease(await locks.acquire({ name: "n", owner: "a" }));
      const before = gets;
      for (let i = 0; i < 5; i++) expectFailure(await locks.acquire({ name: "n", owner: "b" }), 409, "LEASE_EXISTS");
      expect(gets - before).toBe(5);
    } finally {
      await service.stop();
    }
  });
});
