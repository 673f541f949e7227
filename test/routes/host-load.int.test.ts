/**
 * Host loads and the load-aware choosers through running services (1.2):
 * loads published on `<prefix>.loads.<host>` reach every instance (no queue
 * group) and show in `host.list`, junk is ignored, a load older than
 * `--load-stale-ms` is unknown (on an injected clock), `least-load` places
 * by them and `bounded-hash` keeps a route's conversations together, each
 * placement naming its chooser; the subscription outlives a restart of the
 * nats-server; and `leasehold host-load` publishes what its command prints.
 */
import { describe, expect, it, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { ManualClock } from "../../src/actors/clock.ts";
import { publishHostLoad } from "../../src/client/host-load.ts";
import { startLocalNatsServer } from "../../src/cluster/local-cluster.ts";
import { resolveConfig } from "../../src/config.ts";
import { startService } from "../../src/service/start-service.ts";
import { natsUrl, quietLogger, uniquePrefix } from "../support/nats.ts";
import { dataOf, eventsOfKind, ok, routeClient, useRouteServices } from "../support/route-fixtures.ts";
import { startCli } from "../tools/support/cli.ts";

const h = useRouteServices();

type HostRow = { host: string; load?: number | null; active: number };
const loadsIn = (hosts: readonly HostRow[] | undefined) => Object.fromEntries((hosts ?? []).map((x) => [x.host, x.load]));

describe("host loads", () => {
  it("reach every instance, show in host.list, ignore junk and go stale after --load-stale-ms", async () => {
    const prefix = uniquePrefix();
    const clock = new ManualClock();
    // Two instances in one queue group: host.list is answered by either, so each must have its own copy.
    const a = await h.service(prefix, { loadStaleMs: 15_000 }, clock);
    await h.service(prefix, { loadStaleMs: 15_000 }, clock);
    const c = routeClient(a.nc, prefix);
    for (const host of ["a", "b", "c.1"]) ok(await c.setHost({ host, healthy: true }));
    const agent = await h.connect();
    publishHostLoad(agent, "a", 3, { prefix });
    publishHostLoad(agent, "c.1", 0.5, { prefix });
    for (const junk of ["nope", '{"load":-1}', '{"load":"2"}', "[1]", '{"load":null}']) agent.publish(`${prefix}.loads.b`, junk);
    await agent.flush();
    await vi.waitFor(
      async () => {
        // Enough answers that both instances answer some (the queue group picks one at random each time).
        for (let i = 0; i < 12; i++) expect(loadsIn(ok(await c.listHosts()).hosts)).toEqual({ a: 3, b: null, "c.1": 0.5 });
      },
      { timeout: 5000, interval: 20 },
    );
    clock.advance(15_000);
    expect(loadsIn(ok(await c.listHosts()).hosts)).toEqual({ a: 3, b: null, "c.1": 0.5 });
    clock.advance(1);
    for (let i = 0; i < 12; i++) expect(loadsIn(ok(await c.listHosts()).hosts)).toEqual({ a: null, b: null, "c.1": null });
  });

  it("least-load places by the published loads, then by leases; the placement names its chooser", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix, { routeChooser: "least-load" });
    const c = routeClient(svc.nc, prefix);
    for (const host of ["a", "b", "c"]) ok(await c.setHost({ host, healthy: true }));
    // No load known: fewest leases, then name.
    expect(ok(await c.acquire({ route: "r0", fp: "", model: "m", candidates: ["a", "b", "c"] })).host).toBe("a");
    const agent = await h.connect();
    publishHostLoad(agent, "c", 1, { prefix });
    publishHostLoad(agent, "b", 7, { prefix });
    await agent.flush();
    await vi.waitFor(async () => expect(loadsIn(ok(await c.listHosts()).hosts)).toEqual({ a: null, b: 7, c: 1 }), {
      timeout: 5000,
      interval: 20,
    });
    expect(ok(await c.acquire({ route: "r1", fp: "", model: "m", candidates: ["a", "b", "c"] })).host).toBe("c");
    expect(ok(await c.acquire({ route: "r2", fp: "", model: "m", candidates: ["a", "b"] })).host).toBe("b");
    const placed = (await eventsOfKind(svc.service, "route")).filter((e) => e.event.type === "RouteLeasePlaced");
    expect(placed.map((e) => dataOf(e))).toEqual([
      expect.objectContaining({ host: "a", chooser: "least-load" }),
      expect.objectContaining({ host: "c", chooser: "least-load" }),
      expect.objectContaining({ host: "b", chooser: "least-load" }),
    ]);
  });

  it("bounded-hash keeps a route's conversations of one model on few hosts, within the bound", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix, { routeChooser: "bounded-hash", hashBalanceFactor: 1.25 });
    const c = routeClient(svc.nc, prefix);
    const hosts = ["h1", "h2", "h3", "h4"];
    for (const host of hosts) ok(await c.setHost({ host, healthy: true }));
    const on = new Map<string, number>();
    for (let i = 0; i < 20; i++) {
      const host = ok(await c.acquire({ route: "chat", fp: `conv-${i}`, model: "llama", candidates: hosts })).host!;
      on.set(host, (on.get(host) ?? 0) + 1);
      const active = [...on.values()].reduce((s, n) => s + n, 0);
      for (const n of on.values()) expect(n).toBeLessThanOrEqual(Math.ceil((1.25 * active) / hosts.length));
    }
    // One route alone: the bound lets its top host take 1.25x the mean, and the next hosts the rest in score order.
    expect(Math.max(...on.values())).toBeGreaterThanOrEqual(6);
    const placed = (await eventsOfKind(svc.service, "route")).filter((e) => e.event.type === "RouteLeasePlaced");
    expect(placed.every((e) => dataOf(e).chooser === "bounded-hash")).toBe(true);
  });

  it("keeps receiving loads after the nats-server restarts", async () => {
    const server = await startLocalNatsServer();
    h.defer(() => server.stop());
    const url = server.urls[0]!;
    const prefix = uniquePrefix();
    const nc = await connect({ servers: url, maxReconnectAttempts: -1, reconnectTimeWait: 50 });
    const service = await startService({ nc, config: resolveConfig({ prefix, nats: url }), logger: quietLogger });
    h.defer(async () => {
      await service.stop();
      await nc.close();
    });
    const client = await connect({ servers: url, maxReconnectAttempts: -1, reconnectTimeWait: 50 });
    h.defer(() => client.close());
    const c = routeClient(client, prefix);
    ok(await c.setHost({ host: "h", healthy: true }));
    const seesLoad = (load: number) =>
      vi.waitFor(
        async () => {
          publishHostLoad(client, "h", load, { prefix });
          expect(loadsIn(ok(await c.listHosts()).hosts)).toEqual({ h: load });
        },
        { timeout: 20_000, interval: 100 },
      );
    await seesLoad(2);
    await server.restart(0);
    await seesLoad(5);
  });
});

/** `leasehold host-load` against the test nats-server and `prefix`, with `args`. */
const hostLoadCli = (prefix: string, ...args: string[]) => {
  const cli = startCli(["host-load", "--nats", natsUrl(), "--prefix", prefix, ...args]);
  h.defer(() => cli.kill());
  return cli;
};

describe("leasehold host-load", () => {
  it("publishes what its command prints, every period, until stopped", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const c = routeClient(svc.nc, prefix);
    ok(await c.setHost({ host: "gpu-7", healthy: true }));
    const cli = hostLoadCli(prefix, "--host", "gpu-7", "--every", "200ms", "--command", "echo 2.5");
    await vi.waitFor(async () => expect(loadsIn(ok(await c.listHosts()).hosts)).toEqual({ "gpu-7": 2.5 }), {
      timeout: 10_000,
      interval: 50,
    });
    cli.child.kill("SIGTERM");
    expect(await cli.exited).toBe(0);
    expect(cli.stderr()).toMatch(/publishing the load of gpu-7 on .*\.loads\.gpu-7 every 200 ms/);
  });

  it("says in one line why a measurement failed, publishes nothing, and exits 1 with --once", async () => {
    const prefix = uniquePrefix();
    const nc: NatsConnection = await h.connect();
    const seen: string[] = [];
    const sub = nc.subscribe(`${prefix}.loads.>`, { callback: (_e, m) => void seen.push(m.string()) });
    h.defer(() => sub.unsubscribe());
    await nc.flush();
    const failures = [
      ["echo busy", /--command printed "busy", not one number >= 0/],
      ["echo oops >&2; exit 3", /--command failed \(3\): oops/],
      ["sleep 5", /--command took longer than 300 ms \(--timeout\)/],
    ] as const;
    await Promise.all(
      failures.map(async ([command, why]) => {
        const cli = hostLoadCli(prefix, "--host", "h", "--once", "--timeout", "300ms", "--command", command);
        expect(await cli.exited).toBe(1);
        expect(cli.stderr().trim().split("\n")).toEqual([expect.stringMatching(why)]);
      }),
    );
    const good = hostLoadCli(prefix, "--host", "h", "--once", "--load", "4");
    expect(await good.exited).toBe(0);
    await vi.waitFor(() => expect(seen).toEqual(['{"load":4}']), { timeout: 5000, interval: 20 });
  });

  it("says once that NATS is gone and once that it is back, and publishes again after", async () => {
    const server = await startLocalNatsServer();
    h.defer(() => server.stop());
    const url = server.urls[0]!;
    const prefix = uniquePrefix();
    const cli = startCli(["host-load", "--nats", url, "--prefix", prefix, "--host", "h", "--every", "100ms", "--load", "1"]);
    h.defer(() => cli.kill());
    const stderrShows = (what: RegExp) => vi.waitFor(() => expect(cli.stderr()).toMatch(what), { timeout: 20_000, interval: 50 });
    await stderrShows(/publishing the load of h/);
    await server.kill(0, "SIGKILL");
    await stderrShows(
      new RegExp(`NATS connection to ${url.replace("nats://", "")} lost; reconnecting \\(the service takes this host's load`),
    );
    await server.restart(0);
    await stderrShows(/NATS connection to .* back after \d+ ms; publishing again/);
    const nc = await connect({ servers: url });
    h.defer(() => nc.close());
    const sub = nc.subscribe(`${prefix}.loads.h`, { max: 1, timeout: 10_000 });
    for await (const m of sub) expect(m.string()).toBe('{"load":1}');
    cli.child.kill("SIGTERM");
    expect(await cli.exited).toBe(0);
    expect(cli.stderr().match(/lost; reconnecting/g)).toHaveLength(1);
  });
});
