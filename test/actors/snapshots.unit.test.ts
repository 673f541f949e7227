/**
 * Actor snapshots: a restarted host loads an actor's snapshot and replays only
 * the events after it, answers exactly as a full replay would, and ignores a
 * snapshot that is unreadable or does not match the stream.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { ActorHost } from "../../src/actors/actor-host.ts";
import type { TurnResult } from "../../src/actors/cell.ts";
import { ManualClock } from "../../src/actors/clock.ts";
import { lockLogic } from "../../src/actors/lock/logic.ts";
import { decodeSnapshot, encodeSnapshot, MemorySnapshotStore, snapshotKey, type ActorSnapshot } from "../../src/actors/snapshots.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import type { StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/events/subjects.ts";
import { DEFAULT_SETTINGS } from "../support/given-lock.ts";

const subjects = new Subjects("t");
const logger = pino({ level: "silent" });

/** A memory log that records from which sequence each subject read started. */
class CountingLog extends MemoryEventLog {
  readonly reads: number[] = [];
  override readSubject(subject: string, fromSeq: number): Promise<StoredMessage[]> {
    this.reads.push(fromSeq);
    return super.readSubject(subject, fromSeq);
  }
}

function newHost(log: MemoryEventLog, clock: ManualClock, snapshots?: MemorySnapshotStore): ActorHost {
  const host = new ActorHost({ log, subjects, clock, logger, dedupWindowMs: 120_000, snapshots, snapshotEvery: 10 });
  host.register(lockLogic(DEFAULT_SETTINGS));
  return host;
}

const reply = (r: TurnResult) => (r.ok ? r.reply : r.rejection.code);

/** Acquires `L`, renews it `renewals` times (one event each), and returns the last etag. */
async function history(host: ActorHost, renewals: number): Promise<string> {
  const first = (await host.execute("lock", "L", { op: "acquire", owner: "a", ttlMs: 30_000 })) as { ok: true; reply: { lease: { etag: string } } };
  let etag = first.reply.lease.etag;
  for (let i = 0; i < renewals; i++) {
    const r = (await host.execute("lock", "L", { op: "renew", owner: "a", etag }, `renew-${i}`)) as { ok: true; reply: { lease: { etag: string } } };
    etag = r.reply.lease.etag;
  }
  return etag;
}

describe("actor snapshots", () => {
  it("restarts from the snapshot, replaying only the tail, and answers as a full replay does", async () => {
    const clock = new ManualClock();
    const log = new CountingLog({ now: () => clock.now() });
    const store = new MemorySnapshotStore();
    const etag = await history(newHost(log, clock, store), 25);
    const saved = decodeSnapshot(store.saved.get(snapshotKey("lock", "L"))!)!;
    expect(saved.seq).toBeGreaterThanOrEqual(10);

    log.reads.length = 0;
    const withSnapshot = newHost(log, clock, store);
    const fromSnapshot = await withSnapshot.execute("lock", "L", { op: "renew", owner: "a", etag }, "renew-24");
    expect(log.reads[0]).toBe(saved.seq); // hydration started at the snapshot, not at 1

    const full = newHost(log, clock);
    const fromStream = await full.execute("lock", "L", { op: "renew", owner: "a", etag }, "renew-24");
    // Both answer the repeated requestId from its first reply (kept in the snapshot too).
    expect(reply(fromSnapshot)).toEqual(reply(fromStream));
    expect(reply(await withSnapshot.execute("lock", "L", { op: "get" }))).toEqual(reply(await full.execute("lock", "L", { op: "get" })));
    expect(reply(await withSnapshot.execute("lock", "L", { op: "acquire", owner: "b" }))).toBe("LEASE_EXISTS");
  });

  it("ignores a snapshot that does not match the stream, or does not parse", async () => {
    const clock = new ManualClock();
    const log = new MemoryEventLog({ now: () => clock.now() });
    const etag = await history(newHost(log, clock), 3);
    const store = new MemorySnapshotStore();
    // A snapshot claiming a sequence this actor never wrote, with a state that would free the lock.
    const bogus: ActorSnapshot = { v: 1, seq: 999, lastAtMs: 0, state: { name: "L", lease: null, generation: 0, corrupt: null }, recent: [] };
    await store.save("lock", "L", bogus);
    expect(reply(await newHost(log, clock, store).execute("lock", "L", { op: "acquire", owner: "b" }))).toBe("LEASE_EXISTS");

    store.saved.set(snapshotKey("lock", "L"), "{not json");
    const host = newHost(log, clock, store);
    const renewed = await host.execute("lock", "L", { op: "renew", owner: "a", etag });
    expect(renewed.ok).toBe(true);
  });

  it("round-trips Maps and Sets, and rejects what is not a snapshot", () => {
    const state = { leases: new Map([["k", { host: "h" }]]), seen: new Set(["a", "b"]), labels: { $map: "not a map" } };
    const snap: ActorSnapshot = { v: 1, seq: 7, lastAtMs: 5, state, recent: [["m", { ok: 1 }, 3]] };
    const back = decodeSnapshot(encodeSnapshot(snap))!;
    expect(back.state).toEqual(state);
    expect((back.state as typeof state).leases).toBeInstanceOf(Map);
    expect((back.state as typeof state).seen).toBeInstanceOf(Set);
    expect(decodeSnapshot(JSON.stringify({ v: 2, seq: 1, lastAtMs: 0, state: {}, recent: [] }))).toBeUndefined();
    expect(decodeSnapshot(JSON.stringify({ v: 1, seq: 0, lastAtMs: 0, state: {}, recent: [] }))).toBeUndefined();
    expect(snapshotKey("lock", "a.b/ü")).toMatch(/^lock\.[-_A-Za-z0-9=]+$/);
  });
});
