/**
 * Creating the event stream while its cluster forms: "no suitable peers" and
 * "temporarily unavailable" are tried again until the deadline, anything
 * else fails at once, and no wait passes the deadline.
 */
import { JetStreamApiError } from "@nats-io/jetstream";
import { describe, expect, it } from "vitest";
import { CLUSTER_NOT_AVAILABLE, NO_SUITABLE_PEERS, whileClusterForms } from "../../src/events/stream-placement.ts";

const refusal = (code: number, description: string) => new JetStreamApiError({ code: 400, err_code: code, description });

/** A clock that moves only when slept on, and the waits asked of it. */
function patience(timeoutMs: number) {
  let now = 0;
  const waits: number[] = [];
  return {
    waits,
    elapsed: () => now,
    timeoutMs,
    now: () => now,
    sleep: (ms: number) => {
      waits.push(ms);
      now += ms;
      return Promise.resolve();
    },
  };
}

/** An attempt that fails with `errors` in turn, then answers "placed". */
function attempts(...errors: Error[]) {
  let calls = 0;
  return {
    calls: () => calls,
    run: () => {
      const e = errors[calls++];
      return e === undefined ? Promise.resolve("placed") : Promise.reject(e);
    },
  };
}

describe("creating a stream while the cluster forms", () => {
  it("tries again after no suitable peers and an unavailable meta group, waiting longer each time", async () => {
    const p = patience(30_000);
    const a = attempts(
      refusal(CLUSTER_NOT_AVAILABLE, "JetStream system temporarily unavailable"),
      ...Array.from({ length: 5 }, () => refusal(NO_SUITABLE_PEERS, "no suitable peers for placement")),
    );
    await expect(whileClusterForms(a.run, p)).resolves.toBe("placed");
    expect(a.calls()).toBe(7);
    expect(p.waits).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("gives up with the last refusal at its deadline, never waiting past it", async () => {
    const p = patience(1000);
    const a = attempts(...Array.from({ length: 50 }, (_, i) => refusal(NO_SUITABLE_PEERS, `no suitable peers ${i}`)));
    await expect(whileClusterForms(a.run, p)).rejects.toThrow("no suitable peers 4");
    expect(p.waits).toEqual([100, 200, 400, 300]);
    expect(p.elapsed()).toBe(1000);
  });

  it("fails at once on any other error", async () => {
    const p = patience(30_000);
    const a = attempts(refusal(10058, "stream name already in use with a different configuration"));
    await expect(whileClusterForms(a.run, p)).rejects.toThrow("different configuration");
    const b = attempts(new Error("TIMEOUT"));
    await expect(whileClusterForms(b.run, p)).rejects.toThrow("TIMEOUT");
    expect(p.waits).toEqual([]);
  });
});
