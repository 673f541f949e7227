/**
 * The lower bounds a whole-table answer is refused by before it is built
 * (src/transport/micro-service.ts, `SizedAnswer`) are lower than any real
 * row: a table refused unbuilt would not have fit.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { MIN_ROUTE_LEASE_BYTES } from "../../src/route/endpoints.ts";
import { routeLeaseView } from "../../src/route/state.ts";
import { MIN_PROXY_BYTES } from "../../src/proxy/endpoints.ts";
import { startProxyHarness } from "../support/proxy-harness.ts";

const instant = fc.date({ min: new Date(0), max: new Date("9999-12-31T23:59:59.999Z"), noInvalidDate: true }).map((d) => d.toISOString());

describe("the fewest bytes of a row", () => {
  it("of route.snapshot: no lease encodes (with its comma) in fewer than MIN_ROUTE_LEASE_BYTES", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1 }),
        fc.string(),
        fc.string(),
        fc.string({ minLength: 1 }),
        instant,
        instant,
        (route, fp, model, host, createdAt, lastUsedAt) => {
          const lease = {
            fp,
            model,
            host,
            createdAt,
            createdAtMs: Date.parse(createdAt),
            lastUsedAt,
            lastUsedAtMs: Date.parse(lastUsedAt),
          };
          expect(JSON.stringify(routeLeaseView(route, lease)).length + 1).toBeGreaterThanOrEqual(MIN_ROUTE_LEASE_BYTES);
        },
      ),
    );
  });

  it("of proxy.list: the smallest proxy there is encodes (with its comma) in no fewer than MIN_PROXY_BYTES", async () => {
    const h = await startProxyHarness();
    const registered = await h.call("register", { proxy: "p", maxLeases: 0 });
    expect(registered.ok).toBe(true);
    const listed = await h.call("list", {});
    if (!listed.ok) throw new Error(listed.rejection.message);
    const [row] = (listed.reply as { proxies: unknown[] }).proxies;
    expect(JSON.stringify(row).length + 1).toBeGreaterThanOrEqual(MIN_PROXY_BYTES);
  });
});
