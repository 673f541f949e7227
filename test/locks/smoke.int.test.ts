import { afterEach, describe, expect, it } from "vitest";
import { call, startTestService, uniquePrefix, type TestService } from "../support/nats.ts";

describe("smoke", () => {
  let svc: TestService | undefined;
  afterEach(async () => svc?.stop());
  it("acquires a fresh lock at generation 1", async () => {
    const prefix = uniquePrefix();
    svc = await startTestService(prefix);
    const r = await call<{ lease: { generation: number } }>(svc.nc, prefix, "lock.acquire", { name: "a", owner: "o" });
    expect(r.status).toBeUndefined();
    expect(r.body.lease.generation).toBe(1);
  });
});
