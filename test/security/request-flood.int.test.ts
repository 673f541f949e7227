/**
 * A client that floods the service (src/transport/micro-service.ts, fair
 * admission), tried on `leasehold serve` run as a process with small
 * bounds: 3,000 acquires sent at once from one connection, no answer
 * awaited, while another connection takes and releases a lock. Every one of
 * the flood's requests is answered, those past the flooding client's bounds
 * `UNAVAILABLE` without being carried out (no lease for them in the stream's
 * state), the other client's pair succeeds, and the service says what it
 * shed in its log. Stopped (SIGTERM) with thousands more waiting, the
 * process answers every one and exits 0 within its budget, and a restart on
 * the same stream holds a lease for each acquire granted and none for one
 * answered `UNAVAILABLE`.
 */
import { describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { defer, restartLocalServe, startLocalServe, waitForLog } from "../cli/cli-process.ts";
import { ask } from "./default-client.ts";

describe("a client that floods the service", () => {
  it("is answered UNAVAILABLE past its bounds, while another client's lock pair is served", async () => {
    // One request served per client once another sends; one of the flood's may wait.
    const serve = await startLocalServe("request-flood", { LEASEHOLD_MAX_ACTIVE_REQUESTS: "1", LEASEHOLD_MAX_QUEUED_REQUESTS: "10" });
    const [flooder, other] = await Promise.all([0, 1].map(() => connect({ servers: serve.url, maxReconnectAttempts: 0 })));
    defer(async () => {
      await Promise.all([flooder!.close(), other!.close()]);
    });

    const flood = Array.from({ length: 3000 }, (_, i) => ask(flooder!, "lock.acquire", { name: `flood-${i}`, owner: "flooder" }));
    const acquired = await ask(other!, "lock.acquire", { name: "other", owner: "o" });
    expect(acquired).toMatchObject({ lease: { name: "other", owner: "o" } });
    expect(await ask(other!, "lock.release", { name: "other", etag: (acquired.lease as { etag: string }).etag })).toEqual({});

    const answers = await Promise.all(flood);
    const shed = answers.filter((a) => (a.error as { code?: string } | undefined)?.code === "UNAVAILABLE");
    const granted = answers.filter((a) => a.lease !== undefined);
    expect(shed.length + granted.length).toBe(3000);
    expect(shed.length).toBeGreaterThan(0);
    expect(shed[0]).toEqual({
      error: { code: "UNAVAILABLE", message: expect.stringMatching(/^this instance is overloaded: .*not carried out/) },
    });
    // A shed acquire changed nothing: its lock is free.
    const name = `flood-${answers.indexOf(shed[0]!)}`;
    expect(await ask(other!, "lock.get", { name })).toMatchObject({ lease: null });
    const logged = await waitForLog(
      serve.proc,
      "requests answered UNAVAILABLE for load (--max-active-requests, --max-queued-requests); client: the latest one's",
    );
    expect(logged).toMatchObject({ level: expect.anything(), reason: expect.stringMatching(/client-full|queue-full|waited-too-long/) });
  }, 60_000);

  it("stopped (SIGTERM) in a flood of 4,000 acquires, answers every one, exits 0 in its budget, and carried out none it answered UNAVAILABLE", async () => {
    // Small bounds (100 waiting, 10 per client), so that some of the flood is refused however fast this machine serves the rest.
    const serve = await startLocalServe("request-flood-stop", { LEASEHOLD_MAX_ACTIVE_REQUESTS: "1", LEASEHOLD_MAX_QUEUED_REQUESTS: "100" });
    const ncs = await Promise.all([0, 1, 2, 3].map(() => connect({ servers: serve.url, maxReconnectAttempts: 0 })));
    defer(async () => {
      await Promise.all(ncs.map((nc) => nc.close()));
    });
    const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
    // Four connections, half the requests with an inbox of their own: thousands of clients.
    const flood = Array.from({ length: 4000 }, async (_, i) => {
      const body = encode({ name: `stop-${i}`, owner: "flooder", ttlMs: 30_000 });
      const reply = await ncs[i % 4]!.request("leasehold.v1.lock.acquire", body, { timeout: 15_000, noMux: i % 2 === 0 });
      return reply.json<Record<string, unknown>>();
    });
    await Promise.race(flood);
    const stopping = performance.now();
    serve.proc.child.kill("SIGTERM");
    const { code } = await serve.proc.exited;
    expect(code).toBe(0);
    expect(performance.now() - stopping).toBeLessThan(10_000);
    const answers = await Promise.all(flood);
    const granted = answers.map((a) => a.lease !== undefined);
    for (const [i, a] of answers.entries()) {
      if (!granted[i]) expect(a, `stop-${i}`).toMatchObject({ error: { code: "UNAVAILABLE" } });
    }
    expect(granted.filter((g) => !g).length).toBeGreaterThan(0);
    // On the same stream after a restart: a lease for each acquire granted, none for any answered UNAVAILABLE.
    const again = await restartLocalServe(serve);
    const reader = await connect({ servers: again.url, maxReconnectAttempts: 0 });
    defer(() => reader.close());
    // In batches: the reader's own requests, sent all at once, would be past its client's bounds.
    const held: boolean[] = [];
    for (let from = 0; from < answers.length; from += 200) {
      const batch = answers.slice(from, from + 200).map((_, i) => ask(reader, "lock.get", { name: `stop-${from + i}` }));
      for (const got of await Promise.all(batch)) {
        expect(got).toHaveProperty("lease");
        held.push(got.lease !== null);
      }
    }
    expect(held).toEqual(granted);
  }, 90_000);
});
