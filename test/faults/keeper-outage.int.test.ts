/**
 * A lock keeper (TTL 15 s) riding out a service outage: `leasehold serve`
 * with its own nats-server is SIGKILLed just before the keeper's first renew
 * is due (so that renew goes out while NATS is gone) and started again on the
 * same port and data folder. The keeper's connection reconnects with nats.js's
 * defaults; the keeper renews as soon as the service answers again and never
 * loses the lock.
 */
import { describe, expect, it, vi } from "vitest";
import { connect } from "@nats-io/transport-node";
import { LeaseholdClient, type LockLostError } from "../../src/client/index.ts";
import { defer, freePort, leasehold, tempDir, waitForLog, type Proc } from "../cli/cli-process.ts";

const TTL_MS = 15_000;

describe("lock keeper through a service outage", () => {
  it("keeps its lock (TTL 15 s) while serve and its nats-server are killed and restarted", async () => {
    const port = await freePort();
    const dataDir = tempDir("keeper-outage");
    const start = async (): Promise<Proc> => {
      const proc = leasehold(["serve", "--nats-port", String(port), "--data-dir", dataDir, "--http", "off", "--log-format", "json"]);
      await waitForLog(proc, "leasehold serving");
      return proc;
    };
    let serve = await start();
    const nc = await connect({ servers: `nats://127.0.0.1:${port}`, maxReconnectAttempts: -1, name: "keeper" });
    defer(() => nc.close());
    const lost: LockLostError[] = [];
    const client = new LeaseholdClient(nc);
    const acquiredAt = Date.now();
    const keeper = await client.lock.keep({ name: "outage", owner: "keeper", ttlMs: TTL_MS, onLost: (e) => lost.push(e) });
    defer(() => keeper.close().catch(() => undefined));
    const { generation, etag } = keeper;

    // Half a second before the first renew (at ttl / 3): it is sent while nothing answers.
    await new Promise((r) => setTimeout(r, Math.max(0, acquiredAt + keeper.renewEveryMs - 500 - Date.now())));
    const killedAt = Date.now();
    serve.child.kill("SIGKILL");
    await serve.exited;
    serve = await start();
    const outageMs = Date.now() - killedAt;
    expect(outageMs, "the outage this test needs is shorter than half the TTL").toBeLessThan(TTL_MS / 2);

    await vi.waitFor(() => expect(keeper.etag).not.toBe(etag), { timeout: TTL_MS, interval: 20 });
    const renewedAfterServingMs = Date.now() - killedAt - outageMs;
    expect(lost).toEqual([]);
    expect([keeper.held, keeper.generation]).toEqual([true, generation]);
    // Within nats.js's reconnect wait (2 s) and one retry gap (0.5 s) of the service serving again, not a request timeout (5 s) later.
    expect(renewedAfterServingMs).toBeLessThan(2500);
    await keeper.close();
    serve.child.kill("SIGTERM");
    await serve.exited;
  }, 90_000);
});
