/**
 * Issue 9, "Must show": the node leading the event stream (replicas 3) of a
 * three-node cluster SIGKILLed and restarted on the same port
 * and store under a mixed load with two `leasehold serve` processes; then
 * both get SIGTERM.
 */
import { describe, it } from "vitest";
import { expectDrillKeepsItsPromises } from "./drill-expectations.ts";

describe("nats-server SIGKILLed and restarted under load (three-node cluster, the event stream's leader node)", () => {
  it("both instances answer within 5 s of NATS being back, no request waits past its deadline, both exit 0 within 10 s of SIGTERM", async () => {
    await expectDrillKeepsItsPromises("cluster leader restart drill", { nodes: 3, seed: 10 });
  }, 60_000);
});
