/**
 * Issue 9, "Must show": nats-server SIGKILLed and restarted on the same port
 * and store under a mixed load with two `leasehold serve` processes; then
 * both get SIGTERM.
 */
import { describe, it } from "vitest";
import { expectDrillKeepsItsPromises } from "./drill-expectations.ts";

describe("nats-server SIGKILLed and restarted under load (single node)", () => {
  it("both instances answer within 5 s of NATS being back, no request waits past its deadline, both exit 0 within 10 s of SIGTERM", async () => {
    await expectDrillKeepsItsPromises("nats restart drill", { nodes: 1, seed: 9 });
  }, 60_000);
});
