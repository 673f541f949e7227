/**
 * One client's share of an instance's waiting acquires: a tenth of
 * `--max-waiting-acquires`, never less than one lock's queue
 * (`--max-waiters`, so that one client may fill a queue as the contract
 * lets it), never more than the instance's bound.
 */
import { describe, expect, it } from "vitest";
import { clientShareOfWaiting } from "../../src/lock/waiters.ts";

describe("clientShareOfWaiting", () => {
  it.each([
    { maxWaiting: 100_000, maxWaiters: 10_000, share: 10_000 },
    { maxWaiting: 1_000_000, maxWaiters: 10_000, share: 100_000 },
    { maxWaiting: 100_000, maxWaiters: 20_000, share: 20_000 },
    { maxWaiting: 20, maxWaiters: 2, share: 2 },
    { maxWaiting: 20, maxWaiters: 10_000, share: 20 },
    { maxWaiting: 4, maxWaiters: 1, share: 1 },
  ])("is $share of $maxWaiting waiting acquires with queues of $maxWaiters", ({ maxWaiting, maxWaiters, share }) => {
    expect(clientShareOfWaiting(maxWaiting, maxWaiters)).toBe(share);
  });
});
