/**
 * The turn machine alone: its effects replaced with machine.provide() fakes
 * the test controls, its timers on XState's SimulatedClock. Deadlines,
 * cancellation on stop, a conflict followed by success, and an append whose
 * acknowledgement was lost.
 */
import { describe, expect, it } from "vitest";
import { createActor, fromPromise, SimulatedClock } from "xstate";
import {
  baseMsgId,
  LogUnavailableError,
  WrongLastSequenceError,
  encodeEvent,
  type AppendResult,
  type EventEnvelope,
} from "../../src/events/index.ts";
import type { ProjectionRecord } from "../../src/projections/index.ts";
import { lockLogic } from "../../src/actors/lock/logic.ts";
import type { LockCommand } from "../../src/actors/lock/commands.ts";
import { turnMachine, type AppendInput, type CatchUpInput, type TurnPorts } from "../../src/actors/turn-machine.ts";
import type { TurnResult } from "../../src/actors/turn-result.ts";
import { DEFAULT_SETTINGS, T0 } from "../support/lock-given.ts";

const logic = lockLogic(DEFAULT_SETTINGS);
const TIMEOUT_MS = 1000;

/** A step the test settles by hand. */
interface Step<I, O> {
  readonly input: I;
  readonly resolve: (value: O) => void;
  readonly reject: (error: unknown) => void;
  readonly signal: AbortSignal;
}

/** Ports over a one-lock projection the test can move, plus the fake steps' calls. */
function fixture() {
  const clock = new SimulatedClock();
  const records = new Map<string, ProjectionRecord<unknown>>();
  const found = new Map<string, { reply: unknown }>();
  const appends: Step<AppendInput, AppendResult>[] = [];
  const verifies: Step<CatchUpInput, void>[] = [];
  const catchUps: Step<CatchUpInput, void>[] = [];
  const idle: string[] = [];
  const ports: TurnPorts = {
    now: () => T0,
    monotonic: () => clock.now(),
    record: (id) => records.get(id) ?? { state: logic.initialState(id), seq: 0, atMs: 0 },
    remembered: () => undefined,
    decide: (state, command, now) => logic.decide(state as never, command as LockCommand, now),
    encode: (id, decision, now) => {
      if (decision.outcome !== "append") throw new Error("nothing to encode");
      const envelope: EventEnvelope = { type: decision.type, v: 1, at: new Date(now).toISOString(), kind: "lock", id, data: decision.data };
      return { envelope, payload: encodeEvent(envelope) };
    },
    applyOwn: (id, base, event, seq, msgId) => {
      const recorded = { seq, event: event.envelope, msgId };
      const state = logic.evolve(base.state as never, recorded);
      records.set(id, { state, seq, atMs: T0 });
      return logic.replyFor(state, recorded);
    },
    replyRecordedFor: (msgId) => found.get(msgId),
    watch: () => undefined,
    unwatch: () => undefined,
    idle: (id) => idle.push(id),
    dedupWindowMs: 120_000,
    maxAttempts: 8,
  };
  const step =
    <I, O>(calls: Step<I, O>[]) =>
    ({ input, signal }: { input: I; signal: AbortSignal }) =>
      new Promise<O>((resolve, reject) => calls.push({ input, resolve, reject, signal }));
  const machine = turnMachine.provide({
    actors: {
      append: fromPromise(step(appends)),
      verify: fromPromise(step(verifies)),
      catchUp: fromPromise(step(catchUps)),
    },
  });
  const actor = createActor(machine, { input: { ports, id: "x" }, clock });
  actor.start();
  const send = (command: LockCommand, requestId?: string): Promise<TurnResult> =>
    new Promise((resolve) =>
      actor.send({
        type: "COMMAND",
        pending: {
          command,
          requestId,
          requestedAt: undefined,
          msgId: `m-${command.op}-${requestId ?? ""}`,
          deadline: clock.now() + TIMEOUT_MS,
          resolve,
        },
      }),
    );
  return { clock, records, found, appends, verifies, catchUps, idle, actor, send };
}

/** Lock x's state after bob acquired it at stream sequence `seq`. */
function heldByBob(seq: number) {
  return logic.evolve(logic.initialState("x"), {
    seq,
    event: {
      type: "LockAcquired",
      v: 1,
      at: new Date(T0).toISOString(),
      kind: "lock",
      id: "x",
      data: { owner: "bob", generation: 1, ttlMs: 1000, expiresAt: new Date(T0 + 1000).toISOString(), previousOwner: "" },
    },
  });
}

/** Lets the promise callbacks run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("the turn machine", () => {
  it("appends with the projection's sequence and answers from its own event", async () => {
    const f = fixture();
    f.records.set("x", { state: logic.initialState("x"), seq: 41, atMs: 0 });
    const result = f.send({ op: "acquire", owner: "alice" });
    await settle();
    expect(f.appends).toHaveLength(1);
    expect(f.appends[0]!.input.expectedSeq).toBe(41);
    f.appends[0]!.resolve({ seq: 42, duplicate: false });
    expect(await result).toMatchObject({ ok: true, reply: { lease: { owner: "alice", generation: 1 } } });
    expect(f.records.get("x")!.seq).toBe(42);
    expect(f.idle).toContain("x");
  });

  it("after a conflict waits for the writer's sequence, decides again on the new record, and succeeds", async () => {
    const f = fixture();
    const result = f.send({ op: "acquire", owner: "alice" });
    await settle();
    f.appends[0]!.reject(new WrongLastSequenceError("s", 0, { actual: 7 }));
    await settle();
    expect(f.catchUps.map((c) => c.input.seq)).toEqual([7]);
    // Meanwhile the follower folded the other writer's acquire and its release.
    const other = heldByBob(6);
    const released = logic.evolve(other, {
      seq: 7,
      event: { type: "LockReleased", v: 1, at: new Date(T0).toISOString(), kind: "lock", id: "x", data: { owner: "bob", generation: 1 } },
    });
    f.records.set("x", { state: released, seq: 7, atMs: T0 });
    f.catchUps[0]!.resolve();
    await settle();
    expect(f.appends).toHaveLength(2);
    expect(f.appends[1]!.input.expectedSeq).toBe(7);
    f.appends[1]!.resolve({ seq: 8, duplicate: false });
    expect(await result).toMatchObject({ ok: true, reply: { lease: { owner: "alice", generation: 2 } } });
  });

  it("after a lost acknowledgement retries with the same message id, and answers from the stored event on a duplicate", async () => {
    const f = fixture();
    const result = f.send({ op: "acquire", owner: "alice" }, "r1");
    await settle();
    f.appends[0]!.reject(new LogUnavailableError("ack lost", true));
    await settle();
    expect(f.appends).toHaveLength(2);
    expect(f.appends[1]!.input.msgId).toBe(f.appends[0]!.input.msgId);
    expect(f.appends[1]!.input.event.payload).toEqual(f.appends[0]!.input.event.payload);
    f.appends[1]!.resolve({ seq: 3, duplicate: true });
    await settle();
    expect(f.catchUps.map((c) => c.input.seq)).toEqual([3]);
    f.found.set(f.appends[0]!.input.msgId, { reply: { lease: { owner: "alice", generation: 1, etag: "stored" } } });
    f.catchUps[0]!.resolve();
    expect(await result).toEqual({ ok: true, reply: { lease: { owner: "alice", generation: 1, etag: "stored" } } });
  });

  it("when JetStream calls the id a duplicate but the stream holds no event with it, tries again under a variant id", async () => {
    const f = fixture();
    const result = f.send({ op: "acquire", owner: "alice" }, "r1");
    await settle();
    // A proposal lost in a leader change stays in the duplicate window: the ack says duplicate, at no sequence.
    f.appends[0]!.resolve({ seq: 0, duplicate: true });
    await settle();
    expect(f.catchUps.map((c) => c.input.seq)).toEqual([0]);
    f.catchUps[0]!.resolve();
    await settle();
    expect(f.appends).toHaveLength(2);
    const [first, second] = [f.appends[0]!.input.msgId, f.appends[1]!.input.msgId];
    expect(second).not.toBe(first);
    expect(baseMsgId(second)).toBe(first);
    expect(f.appends[1]!.input.expectedSeq).toBe(f.appends[0]!.input.expectedSeq);
    f.appends[1]!.resolve({ seq: 1, duplicate: false });
    expect(await result).toMatchObject({ ok: true, reply: { lease: { owner: "alice" } } });
  });

  it("answers a read only once the projection is known to hold the subject's last event, deciding again when it moved", async () => {
    const f = fixture();
    const result = f.send({ op: "get" });
    await settle();
    expect(f.verifies).toHaveLength(1);
    // The check found a newer event: the record moved while it looked.
    const held = heldByBob(5);
    f.records.set("x", { state: held, seq: 5, atMs: T0 });
    f.verifies[0]!.resolve();
    await settle();
    expect(f.verifies).toHaveLength(2);
    f.verifies[1]!.resolve();
    expect(await result).toMatchObject({ ok: true, reply: { lease: { owner: "bob" } } });
  });

  it("answers UNAVAILABLE at the deadline when the append never answers, and cancels it", async () => {
    const f = fixture();
    const result = f.send({ op: "acquire", owner: "alice" });
    await settle();
    expect(f.appends).toHaveLength(1);
    f.clock.increment(TIMEOUT_MS);
    const answer = await result;
    expect(answer).toMatchObject({ ok: false, rejection: { code: "UNAVAILABLE" }, unavailable: { retryAfterMs: expect.any(Number) } });
    expect(f.appends[0]!.signal.aborted).toBe(true);
  });

  it("serves queued commands in order, each with its own deadline: one that waited past it is answered UNAVAILABLE", async () => {
    const f = fixture();
    const first = f.send({ op: "acquire", owner: "alice" });
    const second = f.send({ op: "get" });
    await settle();
    f.clock.increment(TIMEOUT_MS);
    expect(await first).toMatchObject({ rejection: { code: "UNAVAILABLE" } });
    expect(await second).toMatchObject({ rejection: { code: "UNAVAILABLE" } });
    expect(f.verifies).toHaveLength(0);
  });

  it("cancels the step in flight when the actor is stopped", async () => {
    const f = fixture();
    void f.send({ op: "acquire", owner: "alice" });
    await settle();
    f.actor.stop();
    expect(f.appends[0]!.signal.aborted).toBe(true);
  });
});
