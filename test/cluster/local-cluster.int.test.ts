import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { createServer, type Server } from "node:net";
import { freePort, startLocalCluster, startLocalNatsServer, type LocalNatsCluster } from "../../src/cluster/local-cluster.ts";

describe("a local three-node JetStream cluster", () => {
  let cluster: LocalNatsCluster;
  beforeAll(async () => {
    cluster = await startLocalCluster();
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("forms on distinct loopback ports with a store per node", () => {
    expect(cluster.nodes).toHaveLength(3);
    expect(new Set(cluster.nodes.map((n) => n.port)).size).toBe(3);
    expect(new Set(cluster.nodes.map((n) => n.storeDir)).size).toBe(3);
    for (const url of cluster.urls) expect(url).toMatch(/^nats:\/\/127\.0\.0\.1:\d+$/);
  });

  it("keeps an R3 stream writable through its leader's SIGKILL and brings the node back on the same port and store", async () => {
    const nc = await connect({ servers: [...cluster.urls], maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "R3TEST", subjects: ["r3.>"], num_replicas: 3 });
      const js = jetstream(nc, { timeout: 5000 });
      await js.publish("r3.a", "one");

      const leader = await cluster.leaderOf("R3TEST");
      const { port, storeDir } = cluster.nodes[leader]!;
      await cluster.kill(leader, "SIGKILL");
      expect(cluster.nodes[leader]!.running).toBe(false);

      // A new leader is elected among the two survivors and takes writes.
      const survivor = await cluster.leaderOf("R3TEST", 15_000);
      expect(survivor).not.toBe(leader);
      await expect
        .poll(
          () =>
            js.publish("r3.a", "two").then(
              () => true,
              () => false,
            ),
          { timeout: 15_000, interval: 250 },
        )
        .toBe(true);

      await cluster.restart(leader);
      expect(cluster.nodes[leader]!.running).toBe(true);
      expect(cluster.nodes[leader]!.port).toBe(port);
      expect(cluster.nodes[leader]!.storeDir).toBe(storeDir);
      // Every replica current again: the leader and both followers (the restarted one caught up from its store).
      let cluster3 = "";
      let current = 0;
      for (const deadline = Date.now() + 30_000; current < 3 && Date.now() < deadline; await new Promise((r) => setTimeout(r, 250))) {
        const info = await jsm.streams.info("R3TEST");
        cluster3 = JSON.stringify(info.cluster);
        current = (info.cluster?.replicas ?? []).filter((r) => r.current).length + (info.cluster?.leader === undefined ? 0 : 1);
      }
      expect(current, cluster3).toBe(3);
      expect((await jsm.streams.info("R3TEST")).state.messages).toBeGreaterThanOrEqual(2);
    } finally {
      await nc.close();
    }
  });
});

describe("a single local nats-server", () => {
  it("comes back after SIGKILL on the same port with its store", async () => {
    const server = await startLocalNatsServer();
    try {
      expect(server.nodes).toHaveLength(1);
      const url = server.urls[0]!;
      let nc = await connect({ servers: url });
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: "ONE", subjects: ["one.>"] });
      await jetstream(nc).publish("one.a", "kept");
      await nc.close();
      expect(await server.leaderOf("ONE")).toBe(0);

      await server.kill(0, "SIGKILL");
      await expect(connect({ servers: url, timeout: 500, maxReconnectAttempts: 0 })).rejects.toThrow();
      await server.restart(0);
      expect(server.urls[0]).toBe(url);

      nc = await connect({ servers: url });
      try {
        const info = await (await jetstreamManager(nc)).streams.info("ONE");
        expect(info.state.messages).toBe(1);
      } finally {
        await nc.close();
      }
    } finally {
      await server.stop();
    }
  });

  it("starts again on fresh ports when a port found free is taken before the server binds it", async () => {
    // Another program takes the first port chosen, as an outgoing connection may between the choice and the bind.
    const squatter: Server = createServer();
    await new Promise<void>((resolve) => squatter.listen(0, "127.0.0.1", resolve));
    const taken = (squatter.address() as { port: number }).port;
    const chosen: number[] = [];
    const choosePort = async () => {
      const port = chosen.length === 0 ? taken : await freePort();
      chosen.push(port);
      return port;
    };
    try {
      const server = await startLocalNatsServer({ choosePort });
      try {
        expect(chosen[0]).toBe(taken);
        expect(server.nodes[0]!.port).not.toBe(taken);
        const nc = await connect({ servers: server.urls[0]! });
        await nc.close();
      } finally {
        await server.stop();
      }
      // Ports the caller gives are the caller's: a taken one fails the start, as before.
      await expect(startLocalNatsServer({ ports: [taken] })).rejects.toThrow(/address already in use/);
    } finally {
      squatter.close();
    }
  });
});
