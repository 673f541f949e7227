/**
 * `leasehold status` against a running service: proxies with load and
 * cooldowns, hosts (with the load they publish) and the route leases on them, locks with holder and time
 * left, as aligned tables (and --json); exit 2 with a clear message when no
 * service answers.
 */
import { describe, expect, it, vi } from "vitest";
import { publishHostLoad } from "../../src/client/host-load.ts";
import { natsUrl, uniquePrefix } from "../support/nats.ts";
import { useTestServices } from "../support/cleanup.ts";
import { okSender } from "../support/replies.ts";
import type { ServiceStatus } from "../../src/tools/status.ts";
import { formatDuration } from "../../src/tools/time.ts";
import { runCli } from "./support/cli.ts";

const h = useTestServices();

describe("leasehold status", () => {
  it("shows proxies, hosts with their route leases, and locks with holder and time left; exit 2 once the service is gone", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix, { cooldownMs: 600_000 });
    const agent = await h.connect();
    const send = okSender(agent, prefix);
    await send("proxy.register", { proxy: "eu-1", maxLeases: 4, latencyMs: 20, labels: { region: "eu" } });
    await send("proxy.register", { proxy: "us-1", maxLeases: 2, latencyMs: 40, healthy: false });
    const lease = (await send("proxy.acquire", { ttlMs: 60_000, target: "shop.example" })).lease as { id: string };
    await send("proxy.acquire", { ttlMs: 60_000 });
    await send("proxy.report", { leaseId: lease.id, result: "rate_limited" });
    // A cap of 1: the route's own lease takes it, its conversation inherits the host anyway (full, shown so).
    await send("host.set", { host: "gpu-a", healthy: true, maxLeases: 1 });
    await send("host.set", { host: "gpu-b", healthy: true, draining: true });
    await send("route.acquire", { route: "checkout", fp: "", model: "m1", candidates: ["gpu-a", "gpu-b"] });
    await send("route.acquire", { route: "checkout", fp: "conv 7", model: "m1", candidates: ["gpu-a"] });
    const db = (await send("lock.acquire", { name: "db", owner: "worker-a", ttlMs: 30_000 })).lease as { expiresAt: string };
    const cooldownUntil = Date.parse(
      ((await send("proxy.list", {})).proxies as { cooldowns: { untilAt: string }[] }[])[0]!.cooldowns[0]!.untilAt,
    );
    const done = (await send("lock.acquire", { name: "done", owner: "worker-b" })).lease as { etag: string };
    await send("lock.release", { name: "done", etag: done.etag });
    // gpu-b publishes its load (1.2); it shows once the service has it.
    await vi.waitFor(
      async () => {
        publishHostLoad(agent, "gpu-b", 2.5, { prefix });
        const hosts = (await send("host.list", {})).hosts as { host: string; load: number | null }[];
        expect(hosts.find((x) => x.host === "gpu-b")?.load).toBe(2.5);
      },
      { timeout: 5000, interval: 50 },
    );

    const out = await runCli(["status", "--nats", natsUrl(), "--prefix", prefix]);
    expect(out.code, out.stderr).toBe(0);
    const text = out.stdout;
    expect(text).toMatch(new RegExp(`^leasehold status \\(prefix ${prefix}\\) at \\S+Z\\n`));
    // Time left is what the stated instants give, however long the run took: until − the status's own instant.
    const at = Date.parse(/ at (\S+Z)\n/.exec(text)![1]!);
    const left = (until: number) => formatDuration(until - at).replace(".", "\\.");
    expect(text).toMatch(
      new RegExp(
        `PROXIES \\(2\\)\\n {2}PROXY +LOAD +HEALTHY +LATENCY +LABELS +COOLDOWNS\\n {2}eu-1 +2/4 +yes +20ms +region=eu +shop\\.example ${left(cooldownUntil)} left\\n {2}us-1 +0/2 +no +40ms +- +-\\n`,
      ),
    );
    expect(text).toMatch(
      /HOSTS \(2\)\n {2}HOST +HEALTHY +DRAINING +LEASES +MAX +LOAD\n {2}gpu-a +yes +no +2 \(full\) +1 +-\n {2}gpu-b +yes +yes +0 +- +2\.5\n/,
    );
    expect(text).toMatch(
      /ROUTE LEASES BY HOST \(2\)\n {2}HOST +ROUTE +FP +MODEL +IDLE\n {2}gpu-a +checkout +"" +m1 +\S+\n {2}gpu-a +checkout +"conv 7" +m1 +\S+\n/,
    );
    expect(text).toMatch(
      new RegExp(
        `LOCKS \\(1 held of 2; 1 free or expired not shown, --all-locks lists them\\)\\n {2}LOCK +STATE +HOLDER +GENERATION +EXPIRES +LEFT +WAITERS\\n {2}db +held +worker-a +1 +${db.expiresAt} +${left(Date.parse(db.expiresAt))} +0\\n`,
      ),
    );
    expect(text).not.toMatch(/\n {2}done /);

    const json = await runCli(["status", "--nats", natsUrl(), "--prefix", prefix, "--json", "--all-locks"]);
    expect(json.code, json.stderr).toBe(0);
    const status = JSON.parse(json.stdout) as ServiceStatus;
    expect(status.proxies).toEqual((await send("proxy.list", {})).proxies);
    expect(status.hosts).toEqual((await send("host.list", {})).hosts);
    expect(status.routeLeases).toEqual((await send("route.snapshot", {})).leases);
    const dbStatus = status.locks.find((l) => l.name === "db")!;
    expect(dbStatus).toMatchObject({ state: "held", owner: "worker-a", generation: 1, expiresAt: db.expiresAt });
    expect(dbStatus.leftMs).toBe(Date.parse(db.expiresAt) - Date.parse(status.at));
    expect(dbStatus.leftMs).toBeGreaterThan(0);
    expect(dbStatus.leftMs).toBeLessThanOrEqual(30_000);
    expect(status.locks.find((l) => l.name === "done")).toMatchObject({ state: "free", owner: null, leftMs: null });

    const all = await runCli(["status", "--nats", natsUrl(), "--prefix", prefix, "--all-locks"]);
    expect(all.stdout).toMatch(/\n {2}done +free +- +1 +- +-\n?/);

    await svc.stop();
    const gone = await runCli(["status", "--nats", natsUrl(), "--prefix", prefix, "--timeout-ms", "1000"]);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toMatch(
      new RegExp(
        `leasehold status: no leasehold service listens on ${prefix}\\.v1\\.\\w+\\.\\w+ .*start one with \`npx leasehold serve --prefix ${prefix}\``,
      ),
    );
  });
});
