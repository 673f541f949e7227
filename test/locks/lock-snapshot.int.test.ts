/**
 * Snapshots on a real server: after enough events a lock's snapshot is in the
 * `<P>_SNAPSHOTS` KV bucket, and a restarted service answers from it as it
 * would from the whole history.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { jetstream } from "@nats-io/jetstream";
import { Kvm } from "@nats-io/kv";
import { decodeSnapshot, snapshotKey } from "../../src/actors/snapshots.ts";
import { call, connectNats, startTestService, uniquePrefix, type TestService } from "../support/nats.ts";

const running: TestService[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

describe("lock snapshots", () => {
  it("stores a snapshot after 256 events and a restarted service continues from it", async () => {
    const prefix = uniquePrefix();
    const first = await startTestService(prefix);
    running.push(first);
    type Lease = { lease: { etag: string; generation: number } };
    let etag = (await call<Lease>(first.nc, prefix, "lock.acquire", { name: "hot", owner: "w" })).body.lease.etag;
    for (let i = 0; i < 260; i++) etag = (await call<Lease>(first.nc, prefix, "lock.renew", { name: "hot", owner: "w", etag })).body.lease.etag;

    const nc = await connectNats();
    try {
      const kv = await new Kvm(jetstream(nc)).open(first.service.subjects.snapshotBucket);
      await vi.waitFor(async () => {
        const entry = await kv.get(snapshotKey("lock", "hot"));
        expect(decodeSnapshot(entry?.string() ?? "")?.seq).toBeGreaterThanOrEqual(256);
      });
    } finally {
      await nc.close();
    }
    await first.stop();

    const second = await startTestService(prefix);
    running.push(second);
    const renewed = await call<Lease>(second.nc, prefix, "lock.renew", { name: "hot", owner: "w", etag });
    expect(renewed.status).toBeUndefined();
    expect(renewed.body.lease.generation).toBe(1);
    expect((await call(second.nc, prefix, "lock.acquire", { name: "hot", owner: "x" })).code).toBe("LEASE_EXISTS");
  });
});
