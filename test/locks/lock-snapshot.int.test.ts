/**
 * Projection snapshots on a real server: a stopping service saves each
 * kind's projection to the `<P>_PROJECTIONS` bucket's stream, a restarted
 * service provably starts from it (it folds only the tail, and answers what
 * a doctored snapshot says rather than what the stream's history says) and
 * answers as it would from the whole history, and a snapshot of another fold
 * version is ignored rather than trusted.
 */
import { afterEach, describe, expect, it } from "vitest";
import { lockLogic } from "../../src/lock/logic.ts";
import { ObjectProjectionSnapshotStore } from "../../src/projections/snapshot-stores.ts";
import { readSnapshot, writePart, type RestoredSnapshot } from "../../src/projections/projection-snapshots.ts";
import { call, connectNats, startTestService, uniquePrefix, type TestService } from "../support/nats.ts";

/** The lock projection's fold version, as the service's lock logic declares it. */
const LOCK_FOLD_VERSION = lockLogic({ lockTtlMs: 30_000, maxTtlMs: 30_000 }).foldVersion;

const running: TestService[] = [];
afterEach(async () => {
  for (const s of running.splice(0)) await s.stop();
});

type Lease = { lease: { etag: string; generation: number } };

/** The service's snapshot store under `prefix`, and the lock projection's snapshot as read from it. */
async function lockSnapshot(nc: Awaited<ReturnType<typeof connectNats>>, bucket: string) {
  const store = await ObjectProjectionSnapshotStore.open(nc, bucket, 1);
  const read = await readSnapshot(store, "lock", LOCK_FOLD_VERSION);
  if (read === undefined || typeof read === "string") throw new Error(`no usable lock snapshot: ${read}`);
  return { store, read };
}

/** Every record of a snapshot (the base with its deltas applied). */
const recordsOf = (read: RestoredSnapshot) => new Map(read.parts.flatMap((part) => part.records.map((r) => [r[0], r] as const)));

describe("projection snapshots", () => {
  it("are saved on stop, and a restarted service starts from them and continues", async () => {
    const prefix = uniquePrefix();
    const first = await startTestService(prefix);
    running.push(first);
    let etag = (await call<Lease>(first.nc, prefix, "lock.acquire", { name: "hot", owner: "w" })).body.lease.etag;
    for (let i = 0; i < 50; i++)
      etag = (await call<Lease>(first.nc, prefix, "lock.renew", { name: "hot", owner: "w", etag })).body.lease.etag;
    await call(first.nc, prefix, "lock.acquire", { name: "other", owner: "v" });
    const lastSeq = await first.service.log.lastSeq();
    await first.stop();

    const nc = await connectNats();
    try {
      const { read } = await lockSnapshot(nc, first.service.subjects.projectionBucket);
      expect(read.manifest.seq).toBe(lastSeq);
      expect([...recordsOf(read).keys()].sort()).toEqual(["hot", "other"]);
    } finally {
      await nc.close();
    }

    const second = await startTestService(prefix);
    running.push(second);
    // It folded nothing before the snapshot's sequence: the state came from the snapshot.
    expect(second.service.runtime.projection("lock").startedFromSeq).toBe(lastSeq);
    const renewed = await call<Lease>(second.nc, prefix, "lock.renew", { name: "hot", owner: "w", etag });
    expect(renewed.status).toBeUndefined();
    expect(renewed.body.lease.generation).toBe(1);
    expect((await call(second.nc, prefix, "lock.acquire", { name: "other", owner: "x" })).code).toBe("LEASE_EXISTS");
  });

  /** A lock's kept state with the lock free at generation 41. */
  const doctoredLock = (kept: object): object => ({ ...kept, lease: null, generation: 41 });

  it("are what a restarted service answers from, not a replay of the stream: a doctored snapshot is believed", async () => {
    const prefix = uniquePrefix();
    const first = await startTestService(prefix);
    running.push(first);
    const held = (await call<Lease>(first.nc, prefix, "lock.acquire", { name: "hot", owner: "w" })).body.lease;
    expect(held.generation).toBe(1);
    const lastSeq = await first.service.log.lastSeq();
    await first.stop();

    // The saved snapshot, doctored at the same sequence and fold version: "hot" free at generation 41
    // (each record keeps the lock's state).
    // The stream says "hot" is held at generation 1, so only a service that starts from the snapshot
    // (and folds just the tail after it, here nothing) answers null and then generation 42.
    const nc = await connectNats();
    try {
      const { store, read } = await lockSnapshot(nc, first.service.subjects.projectionBucket);
      expect(read.manifest.seq).toBe(lastSeq);
      const records = [...recordsOf(read).values()].map(([id, state, seq, atMs]) =>
        id === "hot" ? ([id, doctoredLock(state as object), seq, atMs] as const) : ([id, state, seq, atMs] as const),
      );
      // Written as a new base with its own manifest and hash: only a consistent snapshot is believed.
      const { manifest } = read;
      await writePart(store, manifest, [], "doctored", { seq: manifest.seq, records, replies: [], extras: read.parts.at(-1)!.extras });
    } finally {
      await nc.close();
    }

    const second = await startTestService(prefix);
    running.push(second);
    expect((await call<Lease>(second.nc, prefix, "lock.get", { name: "hot" })).body.lease).toBeNull();
    const taken = await call<Lease>(second.nc, prefix, "lock.acquire", { name: "hot", owner: "x" });
    expect(taken.body.lease.generation).toBe(42);
  });

  it("of another fold version are ignored: the service folds the stream from the start", async () => {
    const prefix = uniquePrefix();
    const first = await startTestService(prefix);
    running.push(first);
    const held = (await call<Lease>(first.nc, prefix, "lock.acquire", { name: "a", owner: "w" })).body.lease;
    const lastSeq = await first.service.log.lastSeq();
    await first.stop();

    const nc = await connectNats();
    try {
      // A snapshot that claims the lock is free, stamped with a fold version nobody runs.
      const { store, read } = await lockSnapshot(nc, first.service.subjects.projectionBucket);
      await writePart(store, { ...read.manifest, foldVersion: 999 }, [], "forged", {
        seq: lastSeq,
        records: [["a", { name: "a", lease: null, generation: 7, corrupt: null }, 1, 0]],
        replies: [],
        extras: {},
      });
    } finally {
      await nc.close();
    }

    const second = await startTestService(prefix);
    running.push(second);
    expect(second.service.runtime.projection("lock").startedFromSeq).toBe(0);
    const got = await call<Lease>(second.nc, prefix, "lock.get", { name: "a" });
    expect(got.body.lease).toMatchObject({ generation: held.generation, etag: held.etag });
  });
});
