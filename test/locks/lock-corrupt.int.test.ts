/**
 * CORRUPT (docs/protocol.md, "Locks", defense in depth): events written straight
 * into the stream, bypassing the service, that no honest writer produces make
 * the lock refuse every command but `lock.reset`; a reset frees it and the
 * generation keeps rising from the highest one in its history.
 */
import { describe, expect, it } from "vitest";
import { etagOf } from "../../src/lock/state.ts";
import { uniquePrefix } from "../support/nats.ts";
import {
  dataOf,
  expectFailure,
  expectLease,
  expectOk,
  lockClient,
  lockEnvelope,
  lockHistory,
  useLockHarness,
  writeRaw,
  type LockClient,
} from "../support/lock-fixtures.ts";

const h = useLockHarness();
const MAX = 30_000;

/** Asserts that every op but reset answers 500 CORRUPT for `name`, whose live lease has `etag`. */
async function expectCorrupt(locks: LockClient, name: string, holder: string, etag: string): Promise<void> {
  expectFailure(await locks.acquire({ name, owner: "newcomer" }), 500, "CORRUPT");
  // CORRUPT comes before LEASE_EXISTS, for the holder too.
  expectFailure(await locks.acquire({ name, owner: holder }), 500, "CORRUPT");
  expectFailure(await locks.get({ name }), 500, "CORRUPT");
  expectFailure(await locks.renew({ name, owner: holder, etag }), 500, "CORRUPT");
  expectFailure(await locks.release({ name, etag }), 500, "CORRUPT");
  // Input checks come first: BAD_REQUEST, then TTL_EXCEEDS_MAX, then CORRUPT.
  expectFailure(await locks.acquire({ name, owner: 5 }), 400, "BAD_REQUEST");
  expectFailure(await locks.acquire({ name, owner: "x", ttlMs: MAX + 1 }), 400, "TTL_EXCEEDS_MAX", { ttlMs: MAX + 1, maxTtlMs: MAX });
}

/** Resets `name` and checks that the next acquire continues the generation after `highest`. */
async function expectResetRecovers(locks: LockClient, name: string, highest: number): Promise<void> {
  expect(expectOk(await locks.reset({ name }))).toEqual({});
  expect(expectOk(await locks.get({ name }))).toEqual({ lease: null, waiters: 0 });
  const lease = expectLease(await locks.acquire({ name, owner: "operator-approved" }));
  expect(lease).toMatchObject({ name, owner: "operator-approved", generation: highest + 1 });
  const renewed = expectLease(await locks.renew({ name, owner: "operator-approved", etag: lease.etag }));
  expect(renewed.generation).toBe(highest + 1);
  expect(expectOk(await locks.release({ name, etag: renewed.etag }))).toEqual({});
}

describe("CORRUPT", () => {
  it("refuses a lock whose recorded lease ends more than maxTtlMs after now, until a reset", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const locks = lockClient(svc.nc, prefix);
    const writer = await h.connect();
    const name = "forged";
    const subject = svc.service.subjects.event("lock", name);
    const now = Date.now();
    // A sound history (acquire, release), then a lease no honest writer could grant.
    await writeRaw(
      writer,
      subject,
      lockEnvelope(
        name,
        "LockAcquired",
        {
          owner: "alice",
          generation: 1,
          ttlMs: 1000,
          expiresAt: new Date(now - 5000).toISOString(),
          previousOwner: "",
        },
        new Date(now - 6000),
      ),
    );
    await writeRaw(writer, subject, lockEnvelope(name, "LockReleased", { owner: "alice", generation: 1 }, new Date(now - 5500)));
    const forgedSeq = await writeRaw(
      writer,
      subject,
      lockEnvelope(
        name,
        "LockAcquired",
        {
          owner: "mallory",
          generation: 2,
          ttlMs: 1000,
          expiresAt: new Date(now + 10 * MAX).toISOString(),
          previousOwner: "",
        },
        new Date(now),
      ),
    );

    // A control lock with an honest live lease written the same way answers LEASE_EXISTS, not CORRUPT.
    const control = "honest";
    const honestExpiry = new Date(now + MAX / 2).toISOString();
    await writeRaw(
      writer,
      svc.service.subjects.event("lock", control),
      lockEnvelope(
        control,
        "LockAcquired",
        {
          owner: "carol",
          generation: 1,
          ttlMs: MAX / 2,
          expiresAt: honestExpiry,
          previousOwner: "",
        },
        new Date(now),
      ),
    );
    expectFailure(await locks.acquire({ name: control, owner: "dave" }), 409, "LEASE_EXISTS", { owner: "carol", expiresAt: honestExpiry });

    await expectCorrupt(locks, name, "mallory", etagOf(forgedSeq));
    await expectResetRecovers(locks, name, 2);

    const history = await lockHistory(svc.service, name);
    const reset = history.find((e) => "event" in e && e.event.type === "LockReset");
    expect(reset && "event" in reset ? dataOf(reset.event) : undefined).toEqual({ generation: 2 });
  });

  it("refuses a lock whose subject holds a message that is not JSON, even with a live lease, until a reset", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const locks = lockClient(svc.nc, prefix);
    const writer = await h.connect();
    const name = "garbled";
    const subject = svc.service.subjects.event("lock", name);
    const now = Date.now();
    const liveSeq = await writeRaw(
      writer,
      subject,
      lockEnvelope(
        name,
        "LockAcquired",
        {
          owner: "alice",
          generation: 1,
          ttlMs: MAX / 2,
          expiresAt: new Date(now + MAX / 2).toISOString(),
          previousOwner: "",
        },
        new Date(now),
      ),
    );
    await writeRaw(writer, subject, new TextEncoder().encode("this is {not json"));

    await expectCorrupt(locks, name, "alice", etagOf(liveSeq));
    await expectResetRecovers(locks, name, 1);
  });

  it("refuses a lock whose history skips a generation, and resumes after the highest one found", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const locks = lockClient(svc.nc, prefix);
    const writer = await h.connect();
    const name = "skipped";
    const now = Date.now();
    const seq = await writeRaw(
      writer,
      svc.service.subjects.event("lock", name),
      lockEnvelope(
        name,
        "LockAcquired",
        {
          owner: "alice",
          generation: 7,
          ttlMs: 1000,
          expiresAt: new Date(now + 1000).toISOString(),
          previousOwner: "",
        },
        new Date(now),
      ),
    );
    await expectCorrupt(locks, name, "alice", etagOf(seq));
    await expectResetRecovers(locks, name, 7);
  });
});
