/**
 * A client that floods the service (src/transport/micro-service.ts, fair
 * admission), tried on `leasehold serve` run as a process with small
 * bounds: 3,000 acquires sent at once from one connection, no answer
 * awaited, while another connection takes and releases a lock. Every one of
 * the flood's requests is answered, those past the flooding client's bounds
 * `UNAVAILABLE` without being carried out (no lease for them in the stream's
 * state), the other client's pair succeeds, and the service says what it
 * shed in its log.
 */
import { describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { defer, startLocalServe, waitForLog } from "../cli/cli-process.ts";
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
});
