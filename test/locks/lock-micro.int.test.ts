/**
 * The NATS service framework (docs/protocol.md, "Conventions"): `$SRV.PING`,
 * `$SRV.INFO` and `$SRV.STATS` answer under the name `leasehold`, listing the
 * lock endpoints in the `leasehold` queue group and counting their traffic.
 */
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectLease, lockClient, srv, srvAll, useLockHarness } from "../support/lock-fixtures.ts";

const h = useLockHarness();
const OPS = ["acquire", "renew", "release", "get", "reset"];

describe("service framework", () => {
  it("$SRV.PING.leasehold is answered by the instance, named leasehold, with its prefix", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const id = svc.service.micro.id;
    const client = await h.connect();
    // Other tests' instances answer on the shared server too: find ours by id.
    for (const subject of ["$SRV.PING", "$SRV.PING.leasehold"]) {
      const mine = (await srvAll(client, subject)).filter((r) => r.id === id);
      expect(mine, subject).toHaveLength(1);
      expect(mine[0]).toMatchObject({ type: "io.nats.micro.v1.ping_response", name: "leasehold", metadata: { prefix } });
    }
    const ping = await srv(client, "PING", id);
    expect(ping).toMatchObject({ type: "io.nats.micro.v1.ping_response", name: "leasehold", id, metadata: { prefix } });
    expect(typeof ping.version).toBe("string");
  });

  it("$SRV.INFO lists every lock endpoint in the leasehold queue group", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const client = await h.connect();
    const info = await srv(client, "INFO", svc.service.micro.id);
    expect(info).toMatchObject({ type: "io.nats.micro.v1.info_response", name: "leasehold", id: svc.service.micro.id });
    const endpoints = info.endpoints ?? [];
    for (const op of OPS) {
      const endpoint = endpoints.find((e) => e.subject === `${prefix}.v1.lock.${op}`);
      expect(endpoint, op).toBeDefined();
      expect(endpoint!.queue_group).toBe("leasehold");
    }
    for (const e of endpoints) expect(e.queue_group).toBe("leasehold");
  });

  it("$SRV.STATS counts requests and errors per endpoint", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const client = await h.connect();
    const locks = lockClient(client, prefix);
    const acquireStats = async () =>
      (await srv(client, "STATS", svc.service.micro.id)).endpoints!.find((e) => e.subject === `${prefix}.v1.lock.acquire`)!;

    expect(await acquireStats()).toMatchObject({ num_requests: 0, num_errors: 0, queue_group: "leasehold" });
    expectLease(await locks.acquire({ name: "n", owner: "a" }));
    const refused = await locks.acquire({ name: "n", owner: "b" });
    expectFailure(refused, 409, "LEASE_EXISTS");
    expectFailure(await locks.acquire("not json"), 400, "BAD_REQUEST");
    const stats = await acquireStats();
    expect(stats).toMatchObject({ num_requests: 3, num_errors: 2 });
    expect(stats.last_error).toContain("400");

    const all = await srv(client, "STATS", svc.service.micro.id);
    expect(all).toMatchObject({ type: "io.nats.micro.v1.stats_response", name: "leasehold" });
    const get = all.endpoints!.find((e) => e.subject === `${prefix}.v1.lock.get`)!;
    expect(get).toMatchObject({ num_requests: 0, num_errors: 0 });
  });
});
