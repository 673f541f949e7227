import { pino } from "pino";
import { describe, expect, it, vi } from "vitest";
import { encodeEvent, isUnparsable, type EventEnvelope, type RecordedEvent } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import {
  LogUnavailableError,
  type AppendOptions,
  type AppendResult,
  type EventLog,
  type FollowOptions,
  type Following,
  type StoredMessage,
  type StreamRange,
} from "../../src/events/event-log.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { ActorRuntime } from "../../src/actors/actor-runtime.ts";
import { isInDoubt, type TurnResult } from "../../src/actors/actor-runtime.ts";
import { ManualClock } from "../../src/actors/clock.ts";
import type { LockCommand } from "../../src/lock/commands.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import { etagOf } from "../../src/lock/state.ts";
import { DEFAULT_SETTINGS, iso, T0 } from "../support/lock-given.ts";
import { withCaughtUp } from "../support/projections.ts";

const DEDUP_WINDOW_MS = 120_000;
const subjects = new Subjects("t");
const logger = pino({ level: "silent" });

interface LeaseReply {
  lease: { name: string; owner: string; generation: number; etag: string; expiresAt: string; ttlMs: number } | null;
}

/** An in-memory log on the test's clock, as the runtime and the stream would share one notion of the dedup window. */
function newLog(clock: ManualClock): MemoryEventLog {
  return new MemoryEventLog({ now: () => clock.now(), dedupWindowMs: DEDUP_WINDOW_MS });
}

/** A runtime with the lock kind, its projection caught up with `log`. */
async function newRuntime(log: EventLog, clock: ManualClock, requestTimeoutMs?: number): Promise<ActorRuntime> {
  const runtime = new ActorRuntime({
    log,
    subjects,
    clock,
    logger,
    dedupWindowMs: DEDUP_WINDOW_MS,
    requestTimeoutMs,
    opTimeoutMs: requestTimeoutMs,
  });
  await runtime.register(lockLogic(DEFAULT_SETTINGS)).start();
  return runtime;
}

/** Two instances on one log; B has read lock "x" (so its state of it can go stale). */
async function twoRuntimes(log: EventLog, clock: ManualClock): Promise<{ runtimeA: ActorRuntime; runtimeB: ActorRuntime }> {
  const runtimeA = await newRuntime(log, clock);
  const runtimeB = await newRuntime(log, clock);
  await lock(runtimeB, "x", { op: "get" });
  return { runtimeA, runtimeB };
}

function lock(runtime: ActorRuntime, name: string, command: LockCommand, requestId?: string): Promise<TurnResult> {
  return runtime.execute("lock", name, command, { requestId });
}

function leaseOf(result: TurnResult): NonNullable<LeaseReply["lease"]> {
  if (!result.ok) throw new Error(`expected success, got ${result.rejection.code}: ${result.rejection.message}`);
  const lease = (result.reply as LeaseReply).lease;
  if (lease === null) throw new Error("expected a lease, got none");
  return lease;
}

function codeOf(result: TurnResult): string | undefined {
  return result.ok ? undefined : result.rejection.code;
}

/** The events stored on one lock's subject, decoded; a message that does not parse fails the test unless skipped. */
function eventsOf(log: MemoryEventLog, name: string, skipUnparsable = false): RecordedEvent[] {
  const subject = subjects.event("lock", name);
  const out: RecordedEvent[] = [];
  for (const m of log.messages.filter((m) => m.subject === subject)) {
    const entry = decodeEvent(m.payload, m.seq, m.msgId);
    if (!isUnparsable(entry)) out.push(entry);
    else if (!skipUnparsable) throw new Error(`unparsable event at ${entry.seq}: ${entry.reason}`);
  }
  return out;
}

const encoder = new TextEncoder();

/** Wraps a log so a test can hold the appends to one subject until it lets them go. */
class GatedLog implements EventLog {
  private readonly held = new Map<string, (() => void)[]>();
  constructor(private readonly inner: EventLog) {}
  hold(subject: string): void {
    this.held.set(subject, []);
  }
  waiting(subject: string): number {
    return this.held.get(subject)?.length ?? 0;
  }
  letGo(subject: string): void {
    const waiting = this.held.get(subject) ?? [];
    this.held.delete(subject);
    for (const go of waiting) go();
  }
  async append(subject: string, payload: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    const waiting = this.held.get(subject);
    if (waiting !== undefined) await new Promise<void>((go) => waiting.push(go));
    return this.inner.append(subject, payload, options);
  }
  lastSubjectSeq(subject: string): Promise<number> {
    return this.inner.lastSubjectSeq(subject);
  }
  readSubject(subject: string, fromSeq: number): Promise<StoredMessage[]> {
    return this.inner.readSubject(subject, fromSeq);
  }
  readStream(range?: StreamRange): AsyncIterable<StoredMessage> {
    return this.inner.readStream(range);
  }
  follow(fromSeq: number, onMessage: (message: StoredMessage) => void, filter?: string | FollowOptions): Promise<Following> {
    return this.inner.follow(fromSeq, onMessage, filter);
  }
  lastSeq(): Promise<number> {
    return this.inner.lastSeq();
  }
}

describe("ActorRuntime mailbox", () => {
  it("answers one actor's commands in order, one at a time, while other actors go on", async () => {
    const clock = new ManualClock(T0);
    const memory = newLog(clock);
    const log = new GatedLog(memory);
    const runtime = await newRuntime(log, clock);
    const subjectA = subjects.event("lock", "a");
    log.hold(subjectA);

    const answered: number[] = [];
    const track = (i: number, p: Promise<TurnResult>) => p.then((r) => (answered.push(i), r));
    const first = track(0, lock(runtime, "a", { op: "acquire", owner: "alice" }));
    const second = track(1, lock(runtime, "a", { op: "acquire", owner: "bob" }));
    const third = track(2, lock(runtime, "a", { op: "get" }));
    await vi.waitFor(() => expect(log.waiting(subjectA)).toBe(1), { timeout: 2000, interval: 1 });

    // Another actor is served while "a" waits on its append.
    const other = await lock(runtime, "b", { op: "acquire", owner: "carol" });
    expect(leaseOf(other)).toMatchObject({ owner: "carol", generation: 1 });
    expect(answered).toEqual([]);
    // The commands queued behind the pending append have not been decided on the old state.
    expect(log.waiting(subjectA)).toBe(1);

    log.letGo(subjectA);
    const [r1, r2, r3] = await Promise.all([first, second, third]);
    expect(answered).toEqual([0, 1, 2]);
    expect(leaseOf(r1)).toMatchObject({ owner: "alice", generation: 1 });
    expect(r2).toMatchObject({
      ok: false,
      rejection: { code: "LEASE_EXISTS", details: { owner: "alice", expiresAt: leaseOf(r1).expiresAt } },
    });
    expect(leaseOf(r3)).toEqual(leaseOf(r1));
    expect(eventsOf(memory, "a").map((e) => e.event.type)).toEqual(["LockAcquired"]);
  });

  it("runs a burst of commands to one lock in the order they were sent", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    const owners = ["o0", "o1", "o2", "o3", "o4", "o5"];
    // Each acquire is followed by a reset, so every acquire succeeds, in send order.
    const results = await Promise.all(
      owners.flatMap((owner) => [lock(runtime, "burst", { op: "acquire", owner }), lock(runtime, "burst", { op: "reset" })]),
    );
    const acquisitions = results.filter((_, i) => i % 2 === 0).map(leaseOf);
    expect(acquisitions.map((l) => l.owner)).toEqual(owners);
    expect(acquisitions.map((l) => l.generation)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(eventsOf(log, "burst").map((e) => e.event.type)).toEqual(owners.flatMap(() => ["LockAcquired", "LockReset"]));
  });

  it("keeps different actors independent", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    const both = Promise.all([
      lock(runtime, "a", { op: "acquire", owner: "alice" }),
      lock(runtime, "b", { op: "acquire", owner: "alice" }),
    ]);
    // Each has its own mailbox while it has a command, and none is kept once answered: memory follows live state.
    expect(runtime.activeActors).toBe(2);
    const [a, b] = await both;
    expect(leaseOf(a)).toMatchObject({ name: "a", generation: 1 });
    expect(leaseOf(b)).toMatchObject({ name: "b", generation: 1 });
    expect(runtime.activeActors).toBe(0);
  });
});

describe("ActorRuntime with another writer on the same log", () => {
  it("catches up and decides again when its append conflicts: a stale acquire gets LEASE_EXISTS", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtimeA = await newRuntime(log, clock);
    const runtimeB = await newRuntime(log, clock);
    // B activates the actor first, so it holds the (soon stale) free state.
    expect(await lock(runtimeB, "x", { op: "get" })).toEqual({ ok: true, reply: { lease: null, waiters: 0 } });

    const won = await lock(runtimeA, "x", { op: "acquire", owner: "alice" });
    const lost = await lock(runtimeB, "x", { op: "acquire", owner: "bob" });
    expect(lost).toMatchObject({
      ok: false,
      rejection: { code: "LEASE_EXISTS", details: { owner: "alice", expiresAt: leaseOf(won).expiresAt } },
    });
    expect(eventsOf(log, "x")).toHaveLength(1);
  });

  it("decides again on the caught-up state: the generation continues from the other writer's", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const { runtimeA, runtimeB } = await twoRuntimes(log, clock);

    const a = leaseOf(await lock(runtimeA, "x", { op: "acquire", owner: "alice" }));
    expect(await lock(runtimeA, "x", { op: "release", etag: a.etag })).toEqual({ ok: true, reply: {} });
    const b = leaseOf(await lock(runtimeB, "x", { op: "acquire", owner: "bob" }));
    expect(b).toMatchObject({ owner: "bob", generation: 2 });
    expect(eventsOf(log, "x").map((e) => e.event.data)).toEqual([
      expect.objectContaining({ owner: "alice", generation: 1 }),
      { owner: "alice", generation: 1 },
      expect.objectContaining({ owner: "bob", generation: 2, previousOwner: "" }),
    ]);
  });

  it("does not answer a read from a stale state", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const { runtimeA, runtimeB } = await twoRuntimes(log, clock);
    const a = leaseOf(await lock(runtimeA, "x", { op: "acquire", owner: "alice" }));
    expect(leaseOf(await lock(runtimeB, "x", { op: "get" }))).toEqual(a);
  });

  it("catches up on an event appended directly to the log", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    await lock(runtime, "x", { op: "get" });
    const envelope: EventEnvelope = {
      type: "LockAcquired",
      v: 1,
      at: iso(T0),
      kind: "lock",
      id: "x",
      data: { owner: "zed", generation: 1, ttlMs: 30_000, expiresAt: iso(T0 + 30_000), previousOwner: "" },
    };
    const direct = await log.append(subjects.event("lock", "x"), encodeEvent(envelope), { expectedLastSubjectSeq: 0, msgId: "direct" });
    expect(await lock(runtime, "x", { op: "acquire", owner: "bob" })).toMatchObject({ ok: false, rejection: { code: "LEASE_EXISTS" } });
    expect(await lock(runtime, "x", { op: "release", etag: etagOf(direct.seq) })).toEqual({ ok: true, reply: {} });
    expect(eventsOf(log, "x").map((e) => e.event.type)).toEqual(["LockAcquired", "LockReleased"]);
  });
});

describe("ActorRuntime with lost acknowledgements", () => {
  it("answers success once when the append was stored but its acknowledgement was lost", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    log.injectFaults("timeout-after-store");
    const result = await lock(runtime, "x", { op: "acquire", owner: "alice" });
    const lease = leaseOf(result);
    const events = eventsOf(log, "x");
    expect(events).toHaveLength(1);
    expect(lease).toMatchObject({ owner: "alice", generation: 1, etag: etagOf(events[0]!.seq) });
    // The actor carries on from the stored event.
    expect(leaseOf(await lock(runtime, "x", { op: "get" }))).toEqual(lease);
    expect(await lock(runtime, "x", { op: "acquire", owner: "alice" })).toMatchObject({ ok: false, rejection: { code: "LEASE_EXISTS" } });
    expect(eventsOf(log, "x")).toHaveLength(1);
  });

  it("answers success when the first attempt was stored and the retry's answer was lost too", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    log.injectFaults("timeout-after-store", "timeout-before-store");
    const lease = leaseOf(await lock(runtime, "x", { op: "acquire", owner: "alice" }, "req-1"));
    expect(eventsOf(log, "x")).toHaveLength(1);
    expect(lease.etag).toBe(etagOf(eventsOf(log, "x")[0]!.seq));
  });

  it("stores one event when the first attempt was lost before the store and the retry succeeds", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    log.injectFaults("timeout-before-store");
    const lease = leaseOf(await lock(runtime, "x", { op: "acquire", owner: "alice" }));
    expect(lease).toMatchObject({ owner: "alice", generation: 1 });
    expect(eventsOf(log, "x")).toHaveLength(1);
  });

  it("after two ambiguous failures that did not store, looks at the stream, decides again and stores one event", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    log.injectFaults("timeout-before-store", "timeout-before-store");
    const lease = leaseOf(await lock(runtime, "x", { op: "acquire", owner: "alice" }, "req-1"));
    expect(lease).toMatchObject({ owner: "alice", generation: 1 });
    expect(eventsOf(log, "x")).toHaveLength(1);
  });

  // Deadlines run on timers and performance.now (the runtime's deadline clock), both faked here: the bound is the
  // request deadline on that clock, whatever the machine's load.
  // An append that got no answer may still be stored (a cut-off leader can commit it after the heal): the turn is
  // then in doubt and never answered "nothing was changed"; one the stream refused outright leaves no doubt.
  it.each([
    ["its acknowledgement lost", () => Promise.reject(new LogUnavailableError("no answer (test)", true)), 0, true],
    ["never answered", () => new Promise<AppendResult>(() => undefined), 200, true],
    ["refused outright", () => Promise.reject(new LogUnavailableError("no responders (test)", false)), 0, false],
  ] as const)(
    "answers by the request deadline when no append is ever acknowledged (%s), and stores nothing",
    async (_, append, answeredAtMs, inDoubt) => {
      const clock = new ManualClock(T0);
      const memory = newLog(clock);
      const dead = new (class extends GatedLog {
        override append(): Promise<AppendResult> {
          return append();
        }
      })(memory);
      const runtime = await newRuntime(dead, clock, 200);
      vi.useFakeTimers();
      try {
        const started = performance.now();
        let answered: { result: TurnResult; atMs: number } | undefined;
        void lock(runtime, "x", { op: "acquire", owner: "alice" }, "req-1").then((result) => {
          answered = { result, atMs: performance.now() - started };
        });
        await vi.advanceTimersByTimeAsync(200);
        expect(answered?.atMs).toBe(answeredAtMs);
        expect(codeOf(answered!.result)).toBe("UNAVAILABLE");
        expect(isInDoubt(answered!.result)).toBe(inDoubt);
      } finally {
        vi.useRealTimers();
      }
      expect(memory.messages).toHaveLength(0);
    },
  );
});

describe("ActorRuntime when the log cannot be read", () => {
  it("answers a read UNAVAILABLE while it cannot check the stream, and recovers when it can", async () => {
    const clock = new ManualClock(T0);
    const memory = newLog(clock);
    let failReads = 0;
    const flaky = new (class extends GatedLog {
      override lastSubjectSeq(subject: string): Promise<number> {
        if (failReads > 0) {
          failReads--;
          return Promise.reject(new LogUnavailableError("stream offline (test)", false));
        }
        return super.lastSubjectSeq(subject);
      }
    })(memory);
    // Offline for the follower's consumer too: it cannot say it is caught up.
    const offline = withCaughtUp(flaky, (ms, own) =>
      failReads > 0 ? Promise.reject(new LogUnavailableError("stream offline (test)", false)) : own(ms),
    );
    const runtime = await newRuntime(offline, clock);
    failReads = 1;
    expect(codeOf(await lock(runtime, "x", { op: "get" }))).toBe("UNAVAILABLE");
    expect(leaseOf(await lock(runtime, "x", { op: "acquire", owner: "alice" }))).toMatchObject({ owner: "alice", generation: 1 });
    expect(leaseOf(await lock(runtime, "x", { op: "get" }))).toMatchObject({ owner: "alice", generation: 1 });
  });
});

describe("ActorRuntime idempotency (requestId)", () => {
  it("answers a repeated requestId with the same reply and records nothing new", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    const first = await lock(runtime, "x", { op: "acquire", owner: "alice" }, "req-1");
    clock.advance(1_000);
    const again = await lock(runtime, "x", { op: "acquire", owner: "alice" }, "req-1");
    expect(again).toEqual(first);
    expect(eventsOf(log, "x")).toHaveLength(1);
    expect(eventsOf(log, "x")[0]!.event.requestId).toBe("req-1");
    // Without it, the same command is decided afresh: acquire is not re-entrant.
    expect(codeOf(await lock(runtime, "x", { op: "acquire", owner: "alice" }))).toBe("LEASE_EXISTS");
  });

  it("answers a repeated requestId from a new runtime on the same log (a restart)", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const first = await lock(await newRuntime(log, clock), "x", { op: "acquire", owner: "alice" }, "req-1");
    clock.advance(5_000);
    const restarted = await newRuntime(log, clock);
    expect(await lock(restarted, "x", { op: "acquire", owner: "alice" }, "req-1")).toEqual(first);
    expect(eventsOf(log, "x")).toHaveLength(1);
  });

  it("answers a repeat that reaches an instance whose state is stale", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const { runtimeA, runtimeB } = await twoRuntimes(log, clock);
    const first = await lock(runtimeA, "x", { op: "acquire", owner: "alice" }, "req-1");
    expect(await lock(runtimeB, "x", { op: "acquire", owner: "alice" }, "req-1")).toEqual(first);
    expect(eventsOf(log, "x")).toHaveLength(1);
  });

  it("decides a failed command again when it is repeated", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    const alice = leaseOf(await lock(runtime, "x", { op: "acquire", owner: "alice" }));
    expect(codeOf(await lock(runtime, "x", { op: "acquire", owner: "bob" }, "req-b"))).toBe("LEASE_EXISTS");
    await lock(runtime, "x", { op: "release", etag: alice.etag });
    expect(leaseOf(await lock(runtime, "x", { op: "acquire", owner: "bob" }, "req-b"))).toMatchObject({ owner: "bob", generation: 2 });
  });

  it("does not take a requestId reused for another operation as a repeat", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    const lease = leaseOf(await lock(runtime, "x", { op: "acquire", owner: "alice" }, "same"));
    expect(await lock(runtime, "x", { op: "release", etag: lease.etag }, "same")).toEqual({ ok: true, reply: {} });
    expect(eventsOf(log, "x").map((e) => e.event.type)).toEqual(["LockAcquired", "LockReleased"]);
  });

  it("remembers a requestId for the dedup window and decides it again after", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    const first = await lock(runtime, "x", { op: "acquire", owner: "alice" }, "req-1");
    clock.advance(DEDUP_WINDOW_MS - 1);
    expect(await lock(runtime, "x", { op: "acquire", owner: "alice" }, "req-1")).toEqual(first);
    expect(eventsOf(log, "x")).toHaveLength(1);

    clock.advance(2);
    const later = await lock(runtime, "x", { op: "acquire", owner: "alice" }, "req-1");
    // The first lease expired long ago, so deciding again grants the next generation.
    expect(leaseOf(later)).toMatchObject({ owner: "alice", generation: 2 });
    expect(eventsOf(log, "x")).toHaveLength(2);
  });

  it("answers a repeat the log still holds as a duplicate even when the instance's clock says the window has passed", async () => {
    // Two instances 5 s apart: the stream's dedup window (its own clock) outlasts the fast instance's view of it.
    let serverNow = T0;
    const log = new MemoryEventLog({ now: () => serverNow, dedupWindowMs: DEDUP_WINDOW_MS });
    const slow = new ManualClock(T0 - 5_000);
    const first = await lock(await newRuntime(log, slow), "x", { op: "acquire", owner: "alice" }, "req-1");
    serverNow = T0 + DEDUP_WINDOW_MS - 2_000;
    const fast = new ManualClock(serverNow);
    expect(await lock(await newRuntime(log, fast), "x", { op: "acquire", owner: "alice" }, "req-1")).toEqual(first);
    expect(eventsOf(log, "x")).toHaveLength(1);
  });

  it("decides a requestId again after the dedup window on a new runtime too", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    await lock(await newRuntime(log, clock), "x", { op: "acquire", owner: "alice" }, "req-1");
    clock.advance(DEDUP_WINDOW_MS + 1);
    expect(leaseOf(await lock(await newRuntime(log, clock), "x", { op: "acquire", owner: "alice" }, "req-1"))).toMatchObject({
      generation: 2,
    });
    expect(eventsOf(log, "x")).toHaveLength(2);
  });
});

describe("ActorRuntime time", () => {
  it("never stamps an event earlier than the last one on its subject, even when the clock goes back", async () => {
    const clock = new ManualClock(T0 + 10_000);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    const acquired = leaseOf(await lock(runtime, "x", { op: "acquire", owner: "alice", ttlMs: 20_000 }));

    clock.set(T0);
    const renewed = leaseOf(await lock(runtime, "x", { op: "renew", owner: "alice", etag: acquired.etag }));
    // Decided at the last event's instant, not the clock's, so the lease did not shrink.
    expect(renewed.expiresAt).toBe(iso(T0 + 10_000 + 20_000));

    clock.set(T0 - 60_000);
    await lock(await newRuntime(log, clock), "x", { op: "release", etag: renewed.etag });

    const ats = eventsOf(log, "x").map((e) => Date.parse(e.event.at));
    expect(ats).toEqual([T0 + 10_000, T0 + 10_000, T0 + 10_000]);
    clock.set(T0 + 20_000);
    await lock(runtime, "x", { op: "acquire", owner: "bob" });
    expect(Date.parse(eventsOf(log, "x").at(-1)!.event.at)).toBe(T0 + 20_000);
  });
});

describe("ActorRuntime with a corrupt history", () => {
  it("refuses with CORRUPT after an unparsable message, until a reset", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    const subject = subjects.event("lock", "x");
    const alice = leaseOf(await lock(runtime, "x", { op: "acquire", owner: "alice" }));
    log.appendRaw(subject, encoder.encode("{definitely not an event"));

    for (const command of [
      { op: "get" },
      { op: "acquire", owner: "bob" },
      { op: "renew", owner: "alice", etag: alice.etag },
      { op: "release", etag: alice.etag },
    ] satisfies LockCommand[]) {
      expect(codeOf(await lock(runtime, "x", command))).toBe("CORRUPT");
    }
    expect(log.messages).toHaveLength(2);

    expect(await lock(runtime, "x", { op: "reset" })).toEqual({ ok: true, reply: {} });
    expect(eventsOf(log, "x", true).map((e) => [e.event.type, e.event.data])).toEqual([
      ["LockAcquired", expect.objectContaining({ owner: "alice", generation: 1 })],
      ["LockReset", { generation: 1 }],
    ]);
    expect(leaseOf(await lock(runtime, "x", { op: "acquire", owner: "bob" }))).toMatchObject({ owner: "bob", generation: 2 });
    // A new runtime replaying the same history agrees.
    expect(leaseOf(await lock(await newRuntime(log, clock), "x", { op: "get" }))).toMatchObject({ owner: "bob", generation: 2 });
  });

  it("refuses with CORRUPT a lease recorded beyond the TTL ceiling, until a reset", async () => {
    const clock = new ManualClock(T0);
    const log = newLog(clock);
    const runtime = await newRuntime(log, clock);
    const hostile: EventEnvelope = {
      type: "LockAcquired",
      v: 1,
      at: iso(T0),
      kind: "lock",
      id: "x",
      data: { owner: "eve", generation: 1, ttlMs: 3_600_000, expiresAt: iso(T0 + 3_600_000), previousOwner: "" },
    };
    log.appendRaw(subjects.event("lock", "x"), encodeEvent(hostile));
    expect(codeOf(await lock(runtime, "x", { op: "acquire", owner: "bob" }))).toBe("CORRUPT");
    await lock(runtime, "x", { op: "reset" });
    expect(leaseOf(await lock(runtime, "x", { op: "acquire", owner: "bob" }))).toMatchObject({ owner: "bob", generation: 2 });
  });
});
