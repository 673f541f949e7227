/**
 * Model-based simulation of sessions and the locks held under them: random
 * sequences of opens, keepalives, closes, acquires under a session and by a
 * plain owner, reads and clock moves, run against the real pure core (the
 * session and lock deciders and folds, the lock deciding with the session
 * table as the runtime hands it over, every event encoded and decoded) and
 * against a reference model that knows nothing of instants arithmetic: it
 * steps time one millisecond at a time, ending a session at the first
 * millisecond its `expiresAt` is reached and freeing every lock it holds
 * then. Every answer and every `lock.get` must agree after every step.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { lockLogic } from "../../src/lock/logic.ts";
import { type LockCommand, type LockSettings } from "../../src/lock/commands.ts";
import { sessionLogic } from "../../src/session/logic.ts";
import { type SessionCommand } from "../../src/session/commands.ts";
import { encodeEvent, isUnparsable, type EventEnvelope } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import type { ActorKind } from "../../src/contract/subjects.ts";
import type { LockState } from "../../src/lock/state.ts";
import type { SessionLookup, SessionState } from "../../src/session/state.ts";
import { iso, T0 } from "../support/event-builders.ts";

const SETTINGS: LockSettings = { lockTtlMs: 40, maxTtlMs: 200, claimWindowMs: 20 };
const LOCKS = ["l0", "l1", "l2"];

type Answer = { ok: true; reply: unknown } | { ok: false; code: string };

/** The real core, driven as the runtime drives it. */
class Core {
  private seq = 0;
  private readonly sessions = new Map<string, SessionState>();
  private readonly locks = new Map<string, LockState>();
  private readonly lockLogic = lockLogic(SETTINGS);
  private readonly sessionLogic = sessionLogic(SETTINGS);
  private readonly lookup: SessionLookup = {
    get: (id) => {
      const s = this.sessions.get(id);
      return s?.opened === true ? s : undefined;
    },
  };

  session(id: string, command: SessionCommand, now: number): Answer {
    const logic = this.sessionLogic;
    const state = this.sessions.get(id) ?? logic.initialState(id);
    return this.turn("session", id, state, logic.decide(state, command, now), now, (s) => this.sessions.set(id, s as SessionState), logic);
  }

  lock(name: string, command: LockCommand, now: number): Answer {
    const logic = this.lockLogic;
    const state = this.locks.get(name) ?? logic.initialState(name);
    const decision = logic.decide(state, { ...command, sessions: this.lookup }, now);
    return this.turn("lock", name, state, decision, now, (s) => this.locks.set(name, s as LockState), logic);
  }

  private turn(
    kind: ActorKind,
    id: string,
    state: unknown,
    decision: ReturnType<Core["lockLogic"]["decide"]> | ReturnType<Core["sessionLogic"]["decide"]>,
    now: number,
    keep: (state: unknown) => void,
    logic: { evolve(s: never, e: never): unknown; replyFor(s: never, e: never): unknown },
  ): Answer {
    if (decision.outcome === "reject") return { ok: false, code: decision.rejection.code };
    if (decision.outcome === "reply") return { ok: true, reply: decision.reply };
    const envelope: EventEnvelope = { type: decision.type, v: 1, at: iso(now), kind, id, data: decision.data };
    const entry = decodeEvent(encodeEvent(envelope), ++this.seq);
    if (isUnparsable(entry)) throw new Error(`the core wrote an event that does not parse: ${entry.reason}`);
    const after = logic.evolve(state as never, entry as never);
    keep(after);
    return { ok: true, reply: logic.replyFor(after as never, entry as never) };
  }
}

interface ModelSession {
  readonly id: string;
  expiresAt: number;
  alive: boolean;
}
interface ModelLock {
  holder: { session: ModelSession } | { owner: string; expiresAt: number } | null;
  generation: number;
}

/** The reference: time moves one millisecond at a time, and each step ends what reached its end. */
class Model {
  now = T0;
  readonly sessions: ModelSession[] = [];
  readonly locks = new Map<string, ModelLock>(LOCKS.map((n) => [n, { holder: null, generation: 0 }]));

  advanceTo(t: number): void {
    while (this.now < t) {
      this.now++;
      for (const s of this.sessions) if (s.alive && this.now >= s.expiresAt) s.alive = false;
      for (const l of this.locks.values()) {
        const h = l.holder;
        if (h !== null && ("session" in h ? !h.session.alive : this.now >= h.expiresAt)) l.holder = null;
      }
    }
  }

  held(name: string): boolean {
    return this.locks.get(name)!.holder !== null;
  }
}

type Step =
  | { readonly op: "advance"; readonly ms: number }
  | { readonly op: "open" }
  | { readonly op: "keepalive" | "close"; readonly session: number }
  | { readonly op: "acquireUnder"; readonly session: number; readonly lock: number }
  | { readonly op: "acquire"; readonly lock: number }
  | { readonly op: "get"; readonly lock: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ op: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 60 }) }) },
  { weight: 1, arbitrary: fc.constant({ op: "open" as const }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constantFrom("keepalive" as const, "close" as const), session: fc.nat(2) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("acquireUnder" as const), session: fc.nat(2), lock: fc.nat(LOCKS.length - 1) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("acquire" as const), lock: fc.nat(LOCKS.length - 1) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("get" as const), lock: fc.nat(LOCKS.length - 1) }) },
);

function run(steps: readonly Step[]): void {
  const core = new Core();
  const model = new Model();
  const ttlMs = 50;
  for (const s of steps) {
    const now = model.now;
    switch (s.op) {
      case "advance":
        model.advanceTo(now + s.ms);
        break;
      case "open": {
        const id = `s${model.sessions.length}`;
        const answer = core.session(id, { op: "open", owner: "w", ttlMs }, now);
        expect(answer).toEqual({ ok: true, reply: { session: { id, owner: "w", ttlMs, expiresAt: iso(now + ttlMs) } } });
        model.sessions.push({ id, expiresAt: now + ttlMs, alive: true });
        break;
      }
      case "keepalive":
      case "close": {
        const session = model.sessions[s.session];
        if (session === undefined) break;
        const answer = core.session(session.id, { op: s.op }, now);
        if (!session.alive) {
          expect(answer).toEqual({ ok: false, code: "NO_SESSION" });
        } else if (s.op === "keepalive") {
          session.expiresAt = now + ttlMs;
          expect(answer).toEqual({ ok: true, reply: { session: { id: session.id, owner: "w", ttlMs, expiresAt: iso(now + ttlMs) } } });
        } else {
          session.alive = false;
          for (const l of model.locks.values())
            if (l.holder !== null && "session" in l.holder && l.holder.session === session) l.holder = null;
          expect(answer).toEqual({ ok: true, reply: {} });
        }
        break;
      }
      case "acquireUnder": {
        const session = model.sessions[s.session];
        if (session === undefined) break;
        const name = LOCKS[s.lock]!;
        const answer = core.lock(name, { op: "acquire", owner: "w", session: session.id }, now);
        if (!session.alive) expect(answer).toMatchObject({ ok: false, code: "NO_SESSION" });
        else if (model.held(name)) expect(answer).toMatchObject({ ok: false, code: "LEASE_EXISTS" });
        else {
          const lock = model.locks.get(name)!;
          lock.holder = { session };
          lock.generation++;
          expect(answer).toMatchObject({
            ok: true,
            reply: { lease: { owner: "w", generation: lock.generation, ttlMs, expiresAt: iso(session.expiresAt), session: session.id } },
          });
        }
        break;
      }
      case "acquire": {
        const name = LOCKS[s.lock]!;
        const answer = core.lock(name, { op: "acquire", owner: "x", ttlMs: 30 }, now);
        if (model.held(name)) expect(answer).toMatchObject({ ok: false, code: "LEASE_EXISTS" });
        else {
          const lock = model.locks.get(name)!;
          lock.holder = { owner: "x", expiresAt: now + 30 };
          lock.generation++;
          expect(answer).toMatchObject({ ok: true, reply: { lease: { owner: "x", generation: lock.generation } } });
        }
        break;
      }
      case "get": {
        const name = LOCKS[s.lock]!;
        const answer = core.lock(name, { op: "get" }, now);
        const h = model.locks.get(name)!.holder;
        const expected =
          h === null
            ? null
            : "session" in h
              ? { owner: "w", ttlMs, expiresAt: iso(h.session.expiresAt), session: h.session.id }
              : { owner: "x", expiresAt: iso(h.expiresAt) };
        if (expected === null) expect(answer).toMatchObject({ ok: true, reply: { lease: null } });
        else expect(answer).toMatchObject({ ok: true, reply: { lease: expected } });
        break;
      }
    }
  }
}

describe("session expiry against a millisecond-stepping model", () => {
  it("agrees on every answer: sessions end, and free their locks, at the first millisecond their expiresAt is reached", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 80 }), (steps) => run(steps)),
      { numRuns: 400 },
    );
  });
});
