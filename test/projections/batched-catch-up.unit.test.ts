/** Batched catch-up queries: shared under load, never answering a caller with a query issued before it arrived. */
import { describe, expect, it } from "vitest";
import { batchedCatchUp } from "../../src/projections/batched-catch-up.ts";

/** A query whose runs the test settles by hand, recording when each was issued. */
function controlledQuery() {
  const runs: { issuedAfter: number; settle: (ok: boolean) => void }[] = [];
  let arrivals = 0;
  return {
    runs,
    arrive: () => ++arrivals,
    query: () =>
      new Promise<void>((resolve, reject) => {
        runs.push({ issuedAfter: arrivals, settle: (ok) => (ok ? resolve() : reject(new Error("log down"))) });
      }),
  };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("batchedCatchUp", () => {
  it("answers callers that arrive during a query with one later query, issued after all of them", async () => {
    const q = controlledQuery();
    const fresh = batchedCatchUp(q.query);
    const done: number[] = [];
    const call = () => {
      const n = q.arrive();
      return fresh().then(() => done.push(n));
    };
    const first = call();
    const later = [call(), call(), call()];
    expect(q.runs).toHaveLength(1);
    q.runs[0]!.settle(true);
    await first;
    await tick();
    expect(done).toEqual([1]);
    // One more query serves the three that arrived meanwhile, and it was issued after the last of them.
    expect(q.runs).toHaveLength(2);
    expect(q.runs[1]!.issuedAfter).toBe(4);
    q.runs[1]!.settle(true);
    await Promise.all(later);
    expect(done.sort()).toEqual([1, 2, 3, 4]);
    expect(q.runs).toHaveLength(2);
    // Idle again: the next caller starts its own query at once.
    const again = call();
    expect(q.runs).toHaveLength(3);
    q.runs[2]!.settle(true);
    await again;
  });

  it("passes a failure to the callers of that query only; the next batch runs anew", async () => {
    const q = controlledQuery();
    const fresh = batchedCatchUp(q.query);
    const first = fresh();
    const second = fresh();
    q.runs[0]!.settle(false);
    await expect(first).rejects.toThrow("log down");
    await tick();
    expect(q.runs).toHaveLength(2);
    q.runs[1]!.settle(true);
    await expect(second).resolves.toBeUndefined();
  });
});
