/**
 * One command's turn alone: its effects replaced by fakes the test settles
 * by hand, its timer clock moved by the test. Deadlines given to every step,
 * a conflict followed by success, an append whose acknowledgement was lost,
 * the doubt such an append leaves (never answered as "nothing was changed"
 * while it may still be stored), and the runtime's sweep that answers a turn
 * whose step never ends.
 */
import { describe, expect, it, vi } from "vitest";
import { LogUnavailableError, WrongLastSequenceError, type AppendResult } from "../../src/events/event-log.ts";
import { baseMsgId } from "../../src/events/envelope.ts";
import { encodeEvent, type EventEnvelope } from "../../src/events/envelope.ts";
import type { ProjectionRecord } from "../../src/projections/kind-fold.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import type { LockCommand } from "../../src/lock/commands.ts";
import { runTurn, type AppendInput, type TurnPorts } from "../../src/actors/actor-runtime.ts";
import { TurnDeadlines } from "../../src/actors/actor-runtime.ts";
import { isInDoubt, type TurnResult } from "../../src/actors/actor-runtime.ts";
import type { Decision } from "../../src/actors/kind-logic.ts";
import { DEFAULT_SETTINGS, T0 } from "../support/lock-given.ts";

const logic = lockLogic(DEFAULT_SETTINGS);
const TIMEOUT_MS = 1000;

/** A step the test settles by hand. */
interface Step<I, O> {
  readonly input: I;
  readonly timeoutMs: number;
  readonly resolve: (value: O) => void;
  readonly reject: (error: unknown) => void;
}

interface CatchUp {
  readonly seq: number;
}

/** Ports over a one-lock projection the test can move, plus the fake steps' calls. */
function fixture() {
  let mono = 0;
  const records = new Map<string, ProjectionRecord<unknown>>();
  const found = new Map<string, { reply: unknown }>();
  const appends: Step<AppendInput, AppendResult>[] = [];
  const verifies: Step<CatchUp, void>[] = [];
  const catchUps: Step<CatchUp, void>[] = [];
  const watched = new Set<string>();
  /** Shared ids this instance sent before, and the actor where a copy of one may still land. */
  const sentHere = new Set<string>();
  const inDoubtOn = new Map<string, string>();
  const closed: { msgId: string; id: string; taken: boolean; inDoubt: boolean }[] = [];
  const step = <I, O>(calls: Step<I, O>[], input: I, timeoutMs: number) =>
    new Promise<O>((resolve, reject) => calls.push({ input, timeoutMs, resolve, reject }));
  const ports: TurnPorts = {
    now: () => T0,
    monotonic: () => mono,
    record: (id) => records.get(id) ?? { state: logic.initialState(id), seq: 0, atMs: 0 },
    remembered: () => undefined,
    requestIdReused: () => false,
    holderOf: () => undefined,
    answersRepeat: () => true,
    decide: (state, command, now) => logic.decide(state as never, command as LockCommand, now),
    encode: (id, decision, now) => {
      if (decision.outcome !== "append") throw new Error("nothing to encode");
      const envelope: EventEnvelope = { type: decision.type, v: 1, at: new Date(now).toISOString(), kind: "lock", id, data: decision.data };
      return { envelope, payload: encodeEvent(envelope), atMs: Date.parse(envelope.at) };
    },
    applyOwn: (id, base, event, seq, msgId) => {
      const recorded = { seq, event: event.envelope, msgId };
      const state = logic.evolve(base.state as never, recorded);
      records.set(id, { state, seq, atMs: T0 });
      return logic.replyFor(state, recorded);
    },
    copyOpened: (msgId) => sentHere.has(msgId),
    copyClosed: (msgId, id, outcome) => closed.push({ msgId, id, ...outcome }),
    openCopyElsewhere: (msgId, id) => (inDoubtOn.get(msgId) === id ? undefined : inDoubtOn.get(msgId)),
    replyRecordedFor: (msgId) => found.get(msgId),
    watch: (msgId) => watched.add(msgId),
    unwatch: (msgId) => watched.delete(msgId),
    append: (input) => step(appends, input, input.timeoutMs),
    verify: (_id, timeoutMs) => step(verifies, { seq: 0 }, timeoutMs),
    catchUp: (_id, seq, timeoutMs) => step(catchUps, { seq }, timeoutMs),
    dedupWindowMs: 120_000,
    maxAttempts: 8,
  };
  const send = (command: LockCommand, requestId?: string): Promise<TurnResult> =>
    runTurn(ports, "x", {
      command,
      requestId,
      requestedAt: undefined,
      msgId: `m-${command.op}-${requestId ?? ""}`,
      deadline: mono + TIMEOUT_MS,
    });
  const advance = (ms: number) => (mono += ms);
  return { records, found, appends, verifies, catchUps, watched, sentHere, inDoubtOn, closed, ports, send, advance };
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

/** alice's acquire (requestId r1) with its first append's acknowledgement lost, and the retry answered by `retry`. */
async function afterLostAck(f: ReturnType<typeof fixture>, retry: (step: Step<AppendInput, AppendResult>) => void) {
  const result = f.send({ op: "acquire", owner: "alice" }, "r1");
  await settle();
  f.appends[0]!.reject(new LogUnavailableError("ack lost", true));
  await settle();
  retry(f.appends[1]!);
  await settle();
  return { result };
}

describe("a command's turn", () => {
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
    expect(f.watched.size).toBe(0);
  });

  it("gives every step the time the command has left", async () => {
    const f = fixture();
    const result = f.send({ op: "acquire", owner: "alice" });
    await settle();
    expect(f.appends[0]!.timeoutMs).toBe(TIMEOUT_MS);
    f.advance(300);
    f.appends[0]!.reject(new WrongLastSequenceError("s", 0, { actual: 7 }));
    await settle();
    expect(f.catchUps[0]!.timeoutMs).toBe(TIMEOUT_MS - 300);
    f.advance(TIMEOUT_MS);
    f.catchUps[0]!.reject(new LogUnavailableError("the lock projection to reach sequence 7 timed out", false));
    expect(await result).toMatchObject({ ok: false, rejection: { code: "UNAVAILABLE" }, unavailable: { retryAfterMs: 1000 } });
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

  it("after two lost acknowledgements looks at the subject's last event before deciding again", async () => {
    const f = fixture();
    const result = f.send({ op: "acquire", owner: "alice" }, "r1");
    await settle();
    f.appends[0]!.reject(new LogUnavailableError("ack lost", true));
    await settle();
    f.appends[1]!.reject(new LogUnavailableError("ack lost again", true));
    await settle();
    expect(f.verifies).toHaveLength(1);
    f.verifies[0]!.resolve();
    await settle();
    expect(f.appends).toHaveLength(3);
    f.appends[2]!.resolve({ seq: 1, duplicate: false });
    expect(await result).toMatchObject({ ok: true, reply: { lease: { owner: "alice" } } });
  });

  it("when JetStream calls the id a duplicate but the stream holds no event with it, tries again under a variant id", async () => {
    const f = fixture();
    const result = f.send({ op: "acquire", owner: "alice" }, "r1");
    await settle();
    // A proposal lost in a leader change stays in the duplicate window: the ack says duplicate, at no sequence.
    f.appends[0]!.resolve({ seq: 0, duplicate: true });
    await settle();
    expect(f.verifies).toHaveLength(1);
    f.verifies[0]!.resolve();
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
    f.records.set("x", { state: heldByBob(5), seq: 5, atMs: T0 });
    f.verifies[0]!.resolve();
    await settle();
    expect(f.verifies).toHaveLength(2);
    f.verifies[1]!.resolve();
    expect(await result).toMatchObject({ ok: true, reply: { lease: { owner: "bob" } } });
  });

  it("answers a command that waited past its deadline for its turn UNAVAILABLE without deciding", async () => {
    const f = fixture();
    const pending = { command: { op: "get" } as const, requestId: undefined, requestedAt: undefined, msgId: "m", deadline: 10 };
    f.advance(10);
    expect(await runTurn(f.ports, "x", pending)).toMatchObject({ ok: false, rejection: { code: "UNAVAILABLE" } });
    expect(f.verifies).toHaveLength(0);
  });
});

describe("a turn with an append whose fate it does not know", () => {
  it("answers in doubt, not UNAVAILABLE's 'nothing was changed', when its acknowledgements are lost until the deadline", async () => {
    const f = fixture();
    const { result } = await afterLostAck(f, (retry) => retry.reject(new LogUnavailableError("ack lost again", true)));
    // The subject has not moved past the lost append's expected sequence: it may still be stored.
    f.advance(TIMEOUT_MS);
    f.verifies[0]!.reject(new LogUnavailableError("the stream did not answer in time", true));
    const answer = await result;
    expect(answer).toMatchObject({ ok: false, rejection: { code: "UNAVAILABLE" }, unavailable: { inDoubt: true } });
  });

  it("keeps the doubt of a duplicate at sequence 0 (held by the leader, not stored yet)", async () => {
    const f = fixture();
    const result = f.send({ op: "acquire", owner: "alice" }, "r1");
    await settle();
    f.appends[0]!.resolve({ seq: 0, duplicate: true });
    await settle();
    f.advance(TIMEOUT_MS);
    f.verifies[0]!.reject(new LogUnavailableError("timed out", false));
    expect(isInDoubt(await result)).toBe(true);
  });

  // A proxy grant's id is shared by every proxy: at sequence 0 the copy the stream holds may be on another proxy.
  const sharedGrant = (f: ReturnType<typeof fixture>) => {
    const command: LockCommand = { op: "acquire", owner: "alice" };
    const pending = { command, requestId: "r1", requestedAt: undefined, msgId: "m-shared", deadline: TIMEOUT_MS, msgIdSharedByKind: true };
    return runTurn(f.ports, "x", pending);
  };

  /** Answers the shared grant's append number `at` as a duplicate at sequence 0 that verifies as taken: the turn appends again under a variant, which lands. */
  const takenThenVariant = async (f: ReturnType<typeof fixture>, result: ReturnType<typeof sharedGrant>, at: number) => {
    f.appends[at]!.resolve({ seq: 0, duplicate: true });
    await settle();
    f.verifies[0]!.resolve();
    await settle();
    expect(f.appends).toHaveLength(at + 2);
    expect(f.appends[at + 1]!.input.msgId).not.toBe("m-shared");
    f.appends[at + 1]!.resolve({ seq: 1, duplicate: false });
    expect(await result).toMatchObject({ ok: true, reply: { lease: { owner: "alice" } } });
  };

  it.each([
    ["an earlier turn of this instance left it in doubt on another actor", "y"],
    ["this instance never sent it (another instance's copy, on any actor)", undefined],
  ])("answers in doubt at once a shared id's duplicate at sequence 0 when %s", async (_, leftOn) => {
    const f = fixture();
    if (leftOn !== undefined) {
      f.sentHere.add("m-shared");
      f.inDoubtOn.set("m-shared", leftOn);
    }
    const result = sharedGrant(f);
    await settle();
    f.appends[0]!.resolve({ seq: 0, duplicate: true });
    expect(isInDoubt(await result)).toBe(true);
    expect(f.appends).toHaveLength(1);
    // Its own copy was only called a duplicate: nothing of this turn can land.
    expect(f.closed).toEqual([{ msgId: "m-shared", id: "x", taken: false, inDoubt: true }]);
  });

  it.each([
    ["only a copy of this instance the stream refused behind it", undefined],
    ["a doubt of this instance left on this same actor, where one of the two can land", "x"],
  ])("takes a shared id's duplicate at sequence 0 with %s, and appends under a variant", async (_, leftOn) => {
    const f = fixture();
    f.sentHere.add("m-shared");
    if (leftOn !== undefined) f.inDoubtOn.set("m-shared", leftOn);
    const result = sharedGrant(f);
    await settle();
    await takenThenVariant(f, result, 0);
    expect(f.closed).toEqual([{ msgId: "m-shared", id: "x", taken: true, inDoubt: false }]);
  });

  it("takes a shared id's duplicate at sequence 0 after its own first copy went unanswered, and appends under a variant", async () => {
    const f = fixture();
    const result = sharedGrant(f);
    await settle();
    f.appends[0]!.reject(new LogUnavailableError("timed out", true));
    await settle();
    // The same copy again, as after any lost acknowledgement: the leader holds the first one.
    await takenThenVariant(f, result, 1);
  });

  it("settles the doubt once the subject moved past the lost append without it, and then answers as usual", async () => {
    const f = fixture();
    // The retry meets bob's acquire at sequence 1: alice's lost append expected 0, so it can never be stored.
    const { result } = await afterLostAck(f, (retry) => retry.reject(new WrongLastSequenceError("s", 0, { actual: 1 })));
    f.records.set("x", { state: heldByBob(1), seq: 1, atMs: T0 });
    f.catchUps[0]!.resolve();
    await settle();
    f.verifies[0]!.resolve();
    const answer = await result;
    expect(answer).toMatchObject({ ok: false, rejection: { code: "LEASE_EXISTS" } });
    expect(isInDoubt(answer)).toBe(false);
  });

  it("answers from its own event when the lost append turns up in the stream after all", async () => {
    const f = fixture();
    const { result } = await afterLostAck(f, (retry) => retry.reject(new WrongLastSequenceError("s", 0, { actual: 1 })));
    f.found.set(f.appends[0]!.input.msgId, { reply: { lease: { owner: "alice", generation: 1, etag: "stored" } } });
    f.catchUps[0]!.resolve();
    expect(await result).toEqual({ ok: true, reply: { lease: { owner: "alice", generation: 1, etag: "stored" } } });
  });

  it("does not answer a refusal decided on the sequence a lost append of its own expected", async () => {
    const f = fixture();
    const refusal: Decision = { outcome: "reject", rejection: { code: "LEASE_EXISTS", message: "held (test)" } };
    let decisions = 0;
    f.ports.decide = (state, command, now) => (decisions++ === 0 ? logic.decide(state as never, command as LockCommand, now) : refusal);
    const { result } = await afterLostAck(f, (retry) => retry.reject(new LogUnavailableError("ack lost again", true)));
    f.verifies[0]!.resolve();
    await settle();
    f.verifies[1]!.resolve();
    expect(isInDoubt(await result)).toBe(true);
  });

  it("answers plain UNAVAILABLE when the stream refused the only append outright", async () => {
    const f = fixture();
    const result = f.send({ op: "acquire", owner: "alice" }, "r1");
    await settle();
    f.appends[0]!.reject(new LogUnavailableError("no responders", false));
    const answer = await result;
    expect(answer).toMatchObject({ ok: false, rejection: { code: "UNAVAILABLE" } });
    expect(isInDoubt(answer)).toBe(false);
  });
});

describe("the runtime's deadline sweep", () => {
  it("answers a turn whose step never ends once its deadline passed, and stops its timer when none is left", () => {
    vi.useFakeTimers();
    let mono = 0;
    const deadlines = new TurnDeadlines({ monotonic: () => mono, resolutionMs: 5 });
    const expired: string[] = [];
    const late = { deadline: 20, expire: () => expired.push("late") };
    const onTime = { deadline: 1_000, expire: () => expired.push("on time") };
    deadlines.add(late);
    deadlines.add(onTime);
    vi.advanceTimersByTime(5);
    expect(expired).toEqual([]);
    mono = 25;
    vi.advanceTimersByTime(5);
    expect(expired).toEqual(["late"]);
    expect(deadlines.size).toBe(1);
    deadlines.done(onTime);
    expect(deadlines.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
    vi.useRealTimers();
  });
});
