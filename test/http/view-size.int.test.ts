/**
 * The dashboard's view does not grow with what one client puts inside a row:
 * a host's route leases, a session's locks and a proxy's labels are carried
 * up to a few, with their count (2,000 placements on one host made its row
 * 1.1 MB, and 300 proxies with 60 KB of labels a 17 MB view sent on every
 * change, red team).
 */
import { describe, expect, it } from "vitest";
import { call, uniquePrefix } from "../support/nats.ts";
import { httpServicesPerTest } from "./support/http-service.ts";

const startHttpService = httpServicesPerTest();

interface View {
  hosts: { host: string; leaseCount: number; leases: unknown[] }[];
  proxies: { proxy: string; labels: Record<string, string> }[];
}

describe("the dashboard's view", () => {
  it("carries a few of a row's leases and labels, and how many there are", async () => {
    const s = await startHttpService(uniquePrefix());
    const { nc, config } = s.test;
    const ok = async (op: string, body: unknown) => expect((await call(nc, config.prefix, op, body)).status, op).toBeUndefined();
    await ok("host.set", { host: "gpu-1", healthy: true });
    for (let i = 0; i < 20; i++) await ok("route.acquire", { route: `r${i}`, fp: "", model: "m", candidates: ["gpu-1"] });
    const labels = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, "v".repeat(1000)]));
    await ok("proxy.register", { proxy: "p", maxLeases: 1, labels });

    await expect
      .poll(
        async () => {
          const view = (await (await fetch(`${s.base}/api/view`)).json()) as View;
          const host = view.hosts.find((h) => h.host === "gpu-1");
          const proxy = view.proxies.find((p) => p.proxy === "p");
          return {
            leaseCount: host?.leaseCount,
            leases: host?.leases.length,
            labels: proxy && Object.keys(proxy.labels).length,
            longest: proxy && Math.max(...Object.values(proxy.labels).map((v) => v.length)),
          };
        },
        { timeout: 10_000, interval: 100 },
      )
      .toEqual({ leaseCount: 20, leases: 8, labels: 16, longest: 129 });
  });
});
