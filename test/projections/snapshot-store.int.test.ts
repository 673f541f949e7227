/**
 * The snapshot store on a real server: a blob of several pieces comes back
 * byte for byte, read by direct get when the bucket's stream allows it and
 * by the stream API when it does not, and a blob missing a piece reads as
 * absent rather than as a shorter blob.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { ObjectProjectionSnapshotStore } from "../../src/projections/snapshot-stores.ts";
import { connectNats, uniquePrefix } from "../support/nats.ts";

let nc: NatsConnection;
beforeAll(async () => {
  nc = await connectNats();
});
afterAll(async () => {
  await nc.close();
});

/** A fresh bucket's store; with `direct: false` its stream no longer answers direct gets. */
async function freshStore(direct: boolean) {
  const bucket = `${uniquePrefix().toUpperCase()}_PROJECTIONS`;
  await ObjectProjectionSnapshotStore.open(nc, bucket, 1); // creates the bucket
  const jsm = await jetstreamManager(nc);
  if (!direct) await jsm.streams.update(`OBJ_${bucket}`, { allow_direct: false });
  const store = await ObjectProjectionSnapshotStore.open(nc, bucket, 1);
  return { store, jsm, stream: `OBJ_${bucket}`, bucket };
}

describe("the projection snapshot store", () => {
  for (const direct of [true, false]) {
    it(`returns a blob of several pieces byte for byte (${direct ? "direct get" : "the stream API"})`, async () => {
      const { store } = await freshStore(direct);
      const blob = randomBytes(700 * 1024); // three pieces of at most 256 KiB
      await store.put("lock.b1-abc", blob);
      await store.put("lock.small", Buffer.from("x"));
      expect(Buffer.from((await store.get("lock.b1-abc"))!).equals(blob)).toBe(true);
      expect(Buffer.from((await store.get("lock.small"))!).toString()).toBe("x");
      expect(await store.get("lock.none")).toBeUndefined();
    });
  }

  it("reads a blob with a piece gone as absent", async () => {
    const { store, jsm, stream, bucket } = await freshStore(true);
    await store.put("lock.b2-def", randomBytes(600 * 1024));
    await jsm.streams.purge(stream, { filter: `$O.${bucket}.C.lh.lock.b2-def.1` });
    expect(await store.get("lock.b2-def")).toBeUndefined();
  });
});
