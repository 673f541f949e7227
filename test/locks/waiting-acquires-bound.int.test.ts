/**
 * Waiting acquires are bounded across locks, not only per lock: each one
 * parked holds a few kilobytes of an instance's memory until it is granted
 * or gives up (60,000 parked on 3,000 locks grew one instance by 535 MB), so
 * `--max-waiters` alone let one client park acquires on ever more locks
 * until the process ran out of memory. Tried on `leasehold serve` run as a
 * process with `--max-waiting-acquires 4`: four acquires (from four
 * clients) wait on four held locks, the fifth, on any lock, is refused
 * `TOO_MANY_WAITERS` at once and appends nothing, an acquire that need not
 * wait still works, and once a waiter has given up another may wait. One
 * client holds at most a tenth of the bound or one lock's queue
 * (`--max-waiters`), whichever is more: with 20 and 2, its third waiting
 * acquire, on a third lock, is refused while another client's may wait.
 */
import { describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { defer, freePort, leasehold, tempDir, waitForLog } from "../cli/cli-process.ts";

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

async function ask(nc: NatsConnection, op: string, body: unknown): Promise<Record<string, unknown>> {
  return (await nc.request(`leasehold.v1.${op}`, encode(body), { timeout: 30_000 })).json<Record<string, unknown>>();
}

/** `leasehold serve --max-waiting-acquires <max> [flags]` on its own nats-server; a client of it (one connection each); its stream's last sequence. */
async function serveWithBound(max: number, flags: string[] = []) {
  const port = await freePort();
  const serve = leasehold(
    ["serve", "--nats-port", String(port), "--http", "off", "--log-format", "json", "--max-waiting-acquires", String(max), ...flags],
    { cwd: tempDir("waiting-acquires") },
  );
  defer(async () => {
    serve.child.kill("SIGTERM");
    await serve.exited;
  });
  await waitForLog(serve, "leasehold serving");
  const client = async () => {
    const nc = await connect({ servers: `nats://127.0.0.1:${port}`, maxReconnectAttempts: 0 });
    defer(() => nc.close());
    return nc;
  };
  const jsm = await jetstreamManager(await client());
  const lastSeq = async () => (await jsm.streams.info("LEASEHOLD_EVENTS")).state.last_seq;
  return { client, lastSeq };
}

describe("--max-waiting-acquires", () => {
  it("refuses a waiting acquire past the instance's bound, on any lock, and appends nothing", async () => {
    const { client, lastSeq } = await serveWithBound(4);
    const nc = await client();
    for (let i = 0; i < 5; i++)
      expect(await ask(nc, "lock.acquire", { name: `held-${i}`, owner: "holder", ttlMs: 30_000 })).toHaveProperty("lease");
    // Four clients wait, one on each of four locks; the first gives up soon.
    const clients = await Promise.all([0, 1, 2, 3].map(() => client()));
    const waiting = clients.map((c, i) => ask(c, "lock.acquire", { name: `held-${i}`, owner: `w-${i}`, waitMs: i === 0 ? 5000 : 20_000 }));
    const joined = 5 + 4;
    await expect.poll(lastSeq, { timeout: 10_000, interval: 20 }).toBe(joined);

    expect(await ask(nc, "lock.acquire", { name: "held-4", owner: "w-4", waitMs: 20_000 })).toEqual({
      error: {
        code: "TOO_MANY_WAITERS",
        message: expect.stringMatching(/its maximum \(--max-waiting-acquires 4\)/),
        waiters: 4,
        maxWaiters: 4,
      },
    });
    expect(await lastSeq()).toBe(joined);
    // An acquire that does not wait is no waiter.
    expect(await ask(nc, "lock.acquire", { name: "free", owner: "o" })).toHaveProperty("lease.owner", "o");

    expect(await waiting[0]).toMatchObject({ error: { code: "LEASE_EXISTS" } });
    const later = ask(nc, "lock.acquire", { name: "held-4", owner: "w-5", waitMs: 500 });
    expect(await later).toMatchObject({ error: { code: "LEASE_EXISTS", waitedMs: expect.any(Number) } });
    for (let i = 1; i < 4; i++) void waiting[i]!.catch(() => undefined);
  });

  it("lets one client hold a tenth of them (or one queue's worth), so that its waiting does not shut another client out", async () => {
    const { client, lastSeq } = await serveWithBound(20, ["--max-waiters", "2"]);
    const [greedy, other] = [await client(), await client()];
    for (const name of ["a", "b", "c"])
      expect(await ask(greedy, "lock.acquire", { name, owner: "holder", ttlMs: 30_000 })).toHaveProperty("lease");
    const waiting = ["a", "b"].map((name, i) => ask(greedy, "lock.acquire", { name, owner: `g-${i}`, waitMs: 20_000 }));
    await expect.poll(lastSeq, { timeout: 10_000, interval: 20 }).toBe(3 + 2);

    // On a lock whose queue is empty: only the client's share refuses it.
    expect(await ask(greedy, "lock.acquire", { name: "c", owner: "g-2", waitMs: 20_000 })).toEqual({
      error: {
        code: "TOO_MANY_WAITERS",
        message: expect.stringMatching(/this client holds 2 waiting acquires on this instance, its share/),
        waiters: 2,
        maxWaiters: 2,
      },
    });
    expect(await lastSeq()).toBe(3 + 2);
    const others = ask(other, "lock.acquire", { name: "c", owner: "o-0", waitMs: 20_000 });
    await expect.poll(lastSeq, { timeout: 10_000, interval: 20 }).toBe(3 + 2 + 1);
    for (const w of [...waiting, others]) void w.catch(() => undefined);
  });
});
