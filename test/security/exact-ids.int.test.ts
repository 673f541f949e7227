/**
 * Ids are exact, tried as an attacker on `leasehold serve` run as a process:
 * a name that differs from another only by a leading byte-order mark, a
 * zero-width character or its normalization form is another entity, for
 * locks, hosts, proxies and routes, before and after a restart (which folds
 * the stream again, and then starts from the snapshots it kept).
 */
import { describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { defer, freePort, leasehold, tempDir, waitForLog, type Proc } from "../cli/cli-process.ts";

const BOM = "\uFEFF";
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

async function ask(nc: NatsConnection, op: string, body: unknown): Promise<Record<string, unknown>> {
  const m = await nc.request(`leasehold.v1.${op}`, encode(body), { timeout: 10_000 });
  return m.json<Record<string, unknown>>();
}

async function serve(cwd: string, port: number): Promise<Proc> {
  // Leases that outlive the slowest run of this test: what is compared must not expire in between.
  const ttl = ["--lock-ttl-ms", "600000", "--max-ttl-ms", "600000"];
  const proc = leasehold(["serve", "--nats-port", String(port), "--http", "off", ...ttl], { cwd });
  await waitForLog(proc, "leasehold serving");
  return proc;
}

/** What every twin pair looks like; the same before and after a restart. */
async function observe(nc: NatsConnection) {
  const locks = await Promise.all(["job", `${BOM}job`, "jo\u200Bb"].map((name) => ask(nc, "lock.get", { name })));
  const hosts = ((await ask(nc, "host.list", {})).hosts as { host: string; healthy: boolean; draining: boolean }[]).map((h) => ({
    host: h.host,
    healthy: h.healthy,
    draining: h.draining,
  }));
  const proxies = ((await ask(nc, "proxy.list", {})).proxies as { proxy: string; maxLeases: number }[]).map((p) => ({
    proxy: p.proxy,
    maxLeases: p.maxLeases,
  }));
  const routes = await Promise.all(["r", `${BOM}r`].map((route) => ask(nc, "route.get", { route })));
  return { locks, hosts, proxies, routes };
}

describe("twin ids", () => {
  it("stay two entities of every kind, before and after a restart", async () => {
    const cwd = tempDir("twins");
    const port = await freePort();
    let proc = await serve(cwd, port);
    const nc = await connect({ servers: `nats://127.0.0.1:${port}`, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    defer(() => nc.close());

    // The twin first, then its original: the original must not be taken for the twin's history.
    expect(await ask(nc, "lock.acquire", { name: `${BOM}job`, owner: "mallory" })).toHaveProperty("lease.generation", 1);
    expect(await ask(nc, "lock.acquire", { name: "job", owner: "alice" })).toHaveProperty("lease.generation", 1);
    expect(await ask(nc, "lock.acquire", { name: "jo\u200Bb", owner: "zed" })).toHaveProperty("lease.generation", 1);
    await ask(nc, "host.set", { host: "h1", healthy: true });
    await ask(nc, "host.set", { host: `${BOM}h1`, healthy: false, draining: true });
    await ask(nc, "proxy.register", { proxy: "p1", maxLeases: 5 });
    await ask(nc, "proxy.register", { proxy: `${BOM}p1`, maxLeases: 0 });
    await ask(nc, "route.candidates", { route: `${BOM}r`, hosts: [`${BOM}h1`] });
    expect(await ask(nc, "route.pin", { route: `${BOM}r`, host: `${BOM}h1` })).toEqual({});
    expect(await ask(nc, "route.acquire", { route: "r", fp: "f", model: "m", candidates: ["h1"] })).toEqual({ host: "h1", reused: false });

    const seen = await observe(nc);
    expect(seen.locks.map((l) => (l.lease as { owner: string }).owner)).toEqual(["alice", "mallory", "zed"]);
    expect(seen.hosts).toEqual([
      { host: "h1", healthy: true, draining: false },
      { host: `${BOM}h1`, healthy: false, draining: true },
    ]);
    expect(seen.proxies).toEqual([
      { proxy: "p1", maxLeases: 5 },
      { proxy: `${BOM}p1`, maxLeases: 0 },
    ]);
    expect(seen.routes.map((r) => r.pinned)).toEqual(["", `${BOM}h1`]);

    // Twice: the first restart folds the stream (and keeps snapshots at its stop), the second starts from them.
    for (let restart = 0; restart < 2; restart++) {
      proc.child.kill("SIGTERM");
      expect((await proc.exited).code).toBe(0);
      proc = await serve(cwd, port);
      expect(await observe(nc)).toEqual(seen);
    }
    // Each twin still takes its own commands: the original is not CORRUPT, and its twin keeps its holder.
    expect(await ask(nc, "lock.release", { name: "job", etag: (seen.locks[0]!.lease as { etag: string }).etag })).toEqual({});
    expect(await ask(nc, "lock.get", { name: `${BOM}job` })).toHaveProperty("lease.owner", "mallory");
  });
});
