/**
 * An answer larger than the NATS server's `max_payload` (1 MiB by default)
 * cannot be sent, and any client can make one: `route.acquire` is no
 * operator op, and 2,000 route leases with long names make `route.snapshot`
 * (which `leasehold status` asks) pass it. The client library throws on such
 * a publication, and the service let that end the process, again at every
 * snapshot asked after a restart. Tried on `leasehold serve` run as a
 * process: the asker gets an `INTERNAL` error naming the size at once, and
 * the service keeps serving.
 */
import { describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { defer, startLocalServe } from "../cli/cli-process.ts";
import { ask } from "./default-client.ts";
import { call, startTestService, uniquePrefix } from "../support/nats.ts";
import { MIN_ROUTE_LEASE_BYTES } from "../../src/route/endpoints.ts";

describe("an answer over the server's max_payload", () => {
  it("is an INTERNAL error for the asker, and the service keeps serving", async () => {
    const serve = await startLocalServe("oversized-answer");
    const nc = await connect({ servers: serve.url, maxReconnectAttempts: 0 });
    defer(() => nc.close());
    expect(await ask(nc, "host.set", { host: "h1", healthy: true })).toEqual({ host: "h1" });
    // About 760 bytes of snapshot per lease: 2,000 of them pass 1 MiB.
    const long = (i: number) => String(i).padStart(6, "0") + "f".repeat(240);
    for (let start = 0; start < 2000; start += 100) {
      const batch = Array.from({ length: 100 }, (_, k) =>
        ask(nc, "route.acquire", { route: `r${long(start + k)}`, fp: long(start + k), model: long(start + k), candidates: ["h1"] }),
      );
      for (const reply of await Promise.all(batch)) expect(reply).toMatchObject({ host: "h1" });
    }

    expect(await ask(nc, "route.snapshot", {})).toEqual({
      error: { code: "INTERNAL", message: expect.stringMatching(/^the answer could not be sent: .*(payload|PAYLOAD)/) },
    });
    expect(serve.proc.child.exitCode).toBeNull();
    const acquired = await ask(nc, "lock.acquire", { name: "after", owner: "o" });
    expect(await ask(nc, "lock.release", { name: "after", etag: (acquired.lease as { etag: string }).etag })).toEqual({});
  }, 60_000);

  it("is refused before it is built when its rows alone could not fit: a whole-table read costs no more than one that fits", async () => {
    const prefix = uniquePrefix();
    const s = await startTestService(prefix);
    defer(() => s.stop());
    // Short names: 1 MiB / MIN_ROUTE_LEASE_BYTES leases and a few more, at the fewest bytes each.
    const leases = Math.ceil((1024 * 1024) / MIN_ROUTE_LEASE_BYTES) + 64;
    expect((await call(s.nc, prefix, "host.set", { host: "h", healthy: true })).status).toBeUndefined();
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        for (let i = next++; i < leases; i = next++) {
          const placed = await call(s.nc, prefix, "route.acquire", { route: `r${i % 97}`, fp: String(i), model: "", candidates: ["h"] });
          expect(placed.status).toBeUndefined();
        }
      }),
    );
    const snapshot = await call<{ error?: { code: string; message: string } }>(s.nc, prefix, "route.snapshot", {});
    expect(snapshot.status).toBe(500);
    expect(snapshot.body.error).toEqual({
      code: "INTERNAL",
      message: `the answer could not be sent: it would take at least ${leases * MIN_ROUTE_LEASE_BYTES} bytes, over the server's max_payload of 1048576; read route.get, one route at a time`,
    });
    // One route at a time still answers.
    expect((await call<{ leases: unknown[] }>(s.nc, prefix, "route.get", { route: "r0" })).body.leases.length).toBeGreaterThan(100);
  }, 60_000);
});
