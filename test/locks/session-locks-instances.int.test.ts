/**
 * Locks and sessions across two service instances on one stream and prefix
 * (one queue group, so each request lands on either): a session closed, or
 * a session lease released, through one instance is seen by the next lock
 * command on the other, whether or not that command names a session and
 * whether or not the instance had folded the session's lease yet
 * (src/lock/endpoints.ts, LockTurns; src/lock/unread-sessions.ts).
 */
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectLease, expectOk, lockClient, useLockHarness } from "../support/lock-fixtures.ts";
import { sessionClient } from "../support/session-fixtures.ts";

const h = useLockHarness();

const ROUNDS = 40;

describe("session locks on two instances", () => {
  it("free a lock for a command without a session from the moment its session's close is answered", async () => {
    const prefix = uniquePrefix();
    await h.service(prefix);
    await h.service(prefix);
    const nc = await h.connect();
    const locks = lockClient(nc, prefix);
    const sessions = sessionClient(nc, prefix);
    for (let round = 0; round < ROUNDS; round++) {
      const name = `shard-${round}`;
      const session = expectOk(await sessions.open({ owner: "worker" })).session!;
      expectLease(await locks.acquire({ name, owner: "worker", session: session.id }));
      // Held under a live session: refused to another owner, whichever instance answers.
      expectFailure(await locks.acquire({ name, owner: "other" }), 409, "LEASE_EXISTS");
      expectOk(await sessions.close({ id: session.id }));
      const lease = expectLease(await locks.acquire({ name, owner: "other" }));
      expect(lease).toMatchObject({ owner: "other", generation: 2 });
      expect(lease.session).toBeUndefined();
      expectOk(await locks.release({ name, etag: lease.etag }));
    }
  });
});
