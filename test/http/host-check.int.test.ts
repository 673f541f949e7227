/**
 * DNS rebinding: a web page on another site that points its own name at the
 * dashboard's address makes the operator's browser send that name as `Host`,
 * and could read every lease, owner and session from the dashboard's data
 * (red team: `Host: evil.example` got the full /api/view). The dashboard's
 * page and data answer only IP addresses, localhost and the names the
 * operator allows; health and metrics answer any name (a scraper's).
 */
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { dashboardHostAllowed } from "../../src/http/server.ts";
import { httpServicesPerTest } from "./support/http-service.ts";

const startHttpService = httpServicesPerTest();

/** The status of GET `path` with the `Host` header `host`. */
function statusWithHost(base: string, path: string, host: string): Promise<number> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the dashboard's page and data", () => {
  it("answer IP addresses, localhost and allowed names only; health and metrics answer any", async () => {
    const s = await startHttpService(uniquePrefix(), {}, { allowedHosts: ["Leasehold.Example"] });
    const port = new URL(s.base).port;
    for (const path of ["/", "/api/view"]) {
      expect(await statusWithHost(s.base, path, `evil.example:${port}`), path).toBe(403);
      expect(await statusWithHost(s.base, path, `127.0.0.1:${port}`), path).toBe(200);
      expect(await statusWithHost(s.base, path, `localhost:${port}`), path).toBe(200);
      expect(await statusWithHost(s.base, path, `leasehold.example:${port}`), path).toBe(200);
    }
    expect(await statusWithHost(s.base, "/api/stream", "evil.example")).toBe(403);
    for (const path of ["/healthz", "/metrics"]) expect(await statusWithHost(s.base, path, `evil.example:${port}`), path).toBe(200);
  });

  it("takes a Host header apart as browsers write it", () => {
    expect(dashboardHostAllowed("[::1]:7420", [])).toBe(true);
    expect(dashboardHostAllowed("10.0.0.7", [])).toBe(true);
    expect(dashboardHostAllowed("app.localhost:7420", [])).toBe(true);
    expect(dashboardHostAllowed("localhost.evil.example", [])).toBe(false);
    expect(dashboardHostAllowed("127.0.0.1.evil.example:80", [])).toBe(false);
    expect(dashboardHostAllowed(undefined, [])).toBe(true);
  });
});
