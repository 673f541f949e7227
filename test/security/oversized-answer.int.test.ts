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
});
