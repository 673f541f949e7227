/**
 * Model-based simulation of one lock with its wait queue: random sequences
 * of acquires (failing fast or waiting, with and without requestId), retries
 * by requestId, claims by parked waiters (some of whose instances died and
 * never claim), releases, renews, resets, reads and clock moves (small
 * steps, long jumps, and jumps back), run against the real pure core — the
 * decider, the fold and the replies, driven the way the runtime drives them
 * (remembered replies first, a parked request claims until it gives up) —
 * and against a small reference model that knows nothing of the queue
 * arithmetic: it steps time one millisecond at a time, opening the head's
 * claim window at the first millisecond the lock is free and dropping the
 * head when the window or its wait ends. Every answer, every event count
 * and every `lock.get` must agree after every step.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { lockLogic } from "../../src/lock/logic.ts";
import { decideLock } from "../support/lock-logic.ts";
import { type LockCommand, type LockSettings } from "../../src/lock/commands.ts";
import { isWaitingReply } from "../../src/lock/logic.ts";
import { encodeEvent, isUnparsable, type EventEnvelope } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import { etagOf, initialLockState, type LockState } from "../../src/lock/state.ts";
import { evolveLock } from "../support/lock-logic.ts";
import { iso, T0 } from "../support/event-builders.ts";

const NAME = "sim";
const SETTINGS: LockSettings = { lockTtlMs: 300, maxTtlMs: 600, claimWindowMs: 80 };
const OWNERS = ["a", "b", "c", "d"];

/** What a request is answered, as the wire would carry it (compared between the two sides). */
type Answer = { ok: true; reply: unknown } | { ok: false; code: string; details: Record<string, unknown> };

/** A waiting request that joined the queue and has not been answered yet. */
interface Parked {
  readonly owner: string;
  readonly ttlMs: number;
  readonly requestId: string | undefined;
  readonly place: number;
  readonly giveUpAt: number;
  readonly waitingSince: number;
  /** Its instance died: it never claims. */
  dead: boolean;
}

/** One side of the comparison: takes a turn for a command at an instant, the way the runtime would. */
interface Side {
  turn(command: LockCommand, requestId: string | undefined, clockNow: number): Answer;
  events(): number;
}

/** Drives a side the way LockWaiters does: join, then claim until answered. */
class Driver {
  readonly parked = new Map<number, Parked>();
  private nextId = 0;
  constructor(private readonly side: Side) {}

  acquire(owner: string, ttlMs: number, waitMs: number, requestId: string | undefined, now: number): { answer: Answer; parkedAs?: number } {
    const joined = this.side.turn({ op: "acquire", owner, ttlMs, waitMs, requestId }, requestId, now);
    if (!joined.ok || !isWaitingReply(joined.reply)) return { answer: joined };
    const parked: Parked = {
      owner,
      ttlMs,
      requestId,
      place: joined.reply.waiting.place,
      giveUpAt: now + waitMs,
      waitingSince: now,
      dead: false,
    };
    // A request that may not wait (a retry with waitMs 0) looks once, at once.
    if (waitMs === 0) return { answer: this.claimOnce(parked, now) };
    const id = this.nextId++;
    this.parked.set(id, parked);
    return { answer: joined, parkedAs: id };
  }

  /** Every live parked request looks once (in the given order); returns who was answered, and how. */
  claimAll(order: readonly number[], now: number): [number, Answer][] {
    const answered: [number, Answer][] = [];
    for (const id of order) {
      const p = this.parked.get(id);
      if (p === undefined || p.dead) continue;
      const answer = this.claimOnce(p, now);
      if (answer.ok && isWaitingReply(answer.reply)) continue;
      this.parked.delete(id);
      answered.push([id, answer]);
    }
    return answered;
  }

  private claimOnce(p: Parked, now: number): Answer {
    const command: LockCommand = {
      op: "claim",
      owner: p.owner,
      ttlMs: p.ttlMs,
      place: p.place,
      giveUpAt: p.giveUpAt,
      waitingSince: p.waitingSince,
    };
    return this.side.turn(command, p.requestId, now);
  }
}

/** The real pure core: decider, fold and replies over an in-memory history. */
class RealSide implements Side {
  private state: LockState = initialLockState(NAME);
  private seq = 0;
  private lastAt = 0;
  private readonly remembered = new Map<string, unknown>();
  private readonly logic = lockLogic(SETTINGS);

  turn(command: LockCommand, requestId: string | undefined, clockNow: number): Answer {
    const now = Math.max(clockNow, this.lastAt);
    const key = `${command.op}|${requestId}`;
    if (requestId !== undefined && this.remembered.has(key)) return { ok: true, reply: this.remembered.get(key) };
    const decision = decideLock(this.state, command, now, SETTINGS);
    if (decision.outcome === "reject") return { ok: false, code: decision.rejection.code, details: { ...decision.rejection.details } };
    if (decision.outcome === "reply") return { ok: true, reply: decision.reply };
    const envelope: EventEnvelope = {
      type: decision.type,
      v: 1,
      at: iso(now),
      kind: "lock",
      id: NAME,
      ...(requestId === undefined ? {} : { requestId }),
      data: decision.data,
    };
    const entry = decodeEvent(encodeEvent(envelope), ++this.seq, `m${this.seq}`);
    if (isUnparsable(entry)) throw new Error(`the decider wrote an event the stream refuses: ${entry.reason}`);
    this.state = evolveLock(this.state, entry);
    this.lastAt = now;
    const reply = this.logic.replyFor(this.state, entry);
    if (requestId !== undefined) this.remembered.set(key, reply);
    return { ok: true, reply };
  }

  events(): number {
    return this.seq;
  }
}

interface ModelWaiter {
  readonly place: number;
  readonly owner: string;
  readonly requestId: string | undefined;
  readonly until: number;
}

interface ModelLock {
  lease: { owner: string; generation: number; etag: string; expiresAt: number; ttlMs: number } | null;
  generation: number;
  queue: ModelWaiter[];
  /** When the head's claim window opened (null: not open). */
  windowOpenedAt: number | null;
}

/** The reference: the lock as the contract words it, stepping time one millisecond at a time. */
class ModelSide implements Side {
  private base: ModelLock = { lease: null, generation: 0, queue: [], windowOpenedAt: null };
  private lastAt = 0;
  private seq = 0;
  private readonly remembered = new Map<string, unknown>();

  turn(command: LockCommand, requestId: string | undefined, clockNow: number): Answer {
    const now = Math.max(clockNow, this.lastAt);
    const key = `${command.op}|${requestId}`;
    if (requestId !== undefined && this.remembered.has(key)) return { ok: true, reply: this.remembered.get(key) };
    const s = structuredClone(this.base);
    if (this.seq > 0) for (let t = this.lastAt + 1; t <= now; t++) settle(s, t);
    else settle(s, now);
    const append = (reply: unknown): Answer => {
      this.seq++;
      settle(s, now);
      this.base = s;
      this.lastAt = now;
      if (requestId !== undefined) this.remembered.set(key, reply);
      return { ok: true, reply };
    };
    const free = s.lease === null || s.lease.expiresAt <= now;
    const head = s.queue[0];
    const headMayClaim = head !== undefined && free;
    const refuse = (waitedMs?: number): Answer => {
      const held =
        !free && s.lease !== null
          ? { owner: s.lease.owner, expiresAt: iso(s.lease.expiresAt) }
          : {
              owner: head?.owner ?? "",
              expiresAt: iso(head === undefined ? now : Math.min(head.until, s.windowOpenedAt! + SETTINGS.claimWindowMs!)),
            };
      return { ok: false, code: "LEASE_EXISTS", details: waitedMs === undefined ? held : { ...held, waitedMs } };
    };
    const grant = (owner: string, ttlMs: number, fromQueue: boolean): Answer => {
      if (fromQueue) {
        s.queue.shift();
        s.windowOpenedAt = null;
      }
      const lease = { owner, generation: s.generation + 1, etag: etagOf(this.seq + 1), expiresAt: now + ttlMs, ttlMs };
      s.lease = lease;
      s.generation++;
      return append({ lease: { name: NAME, ...lease, expiresAt: iso(lease.expiresAt) } });
    };
    const available = free && head === undefined;
    switch (command.op) {
      case "get": {
        const live = !free ? s.lease : null;
        const lease = live === null ? null : { name: NAME, ...live, expiresAt: iso(live.expiresAt) };
        return { ok: true, reply: { lease, waiters: s.queue.filter((w) => w.until > now).length } };
      }
      case "acquire": {
        const ttlMs = command.ttlMs ?? SETTINGS.lockTtlMs;
        const own = s.queue.find(
          (w) => w.requestId !== undefined && w.requestId === command.requestId && w.owner === command.owner && w.until > now,
        );
        if (own !== undefined) {
          if (own === head && headMayClaim) return grant(command.owner, ttlMs, true);
          if ((command.waitMs ?? 0) === 0) return refuse();
          return { ok: true, reply: { waiting: { place: own.place, untilMs: own.until } } };
        }
        if (available) return grant(command.owner, ttlMs, false);
        if ((command.waitMs ?? 0) > 0) {
          const waiter = { place: this.seq + 1, owner: command.owner, requestId, until: now + command.waitMs! };
          s.queue.push(waiter);
          return append({ waiting: { place: waiter.place, untilMs: waiter.until } });
        }
        return refuse();
      }
      case "claim": {
        const ttlMs = command.ttlMs ?? SETTINGS.lockTtlMs;
        const own = s.queue.find((w) => w.place === command.place && w.until > now);
        if (own !== undefined && own === head && headMayClaim) return grant(command.owner, ttlMs, true);
        const waitedMs = Math.max(0, now - command.waitingSince);
        if (now >= command.giveUpAt) return refuse(waitedMs);
        if (own !== undefined) return { ok: true, reply: { waiting: { place: own.place, untilMs: own.until } } };
        return available ? grant(command.owner, ttlMs, false) : refuse(waitedMs);
      }
      case "renew": {
        if (s.lease === null || s.lease.owner !== command.owner || s.lease.etag !== command.etag)
          return { ok: false, code: "NOT_HELD", details: {} };
        const ttlMs = command.ttlMs ?? s.lease.ttlMs;
        s.lease = { ...s.lease, etag: etagOf(this.seq + 1), expiresAt: now + ttlMs, ttlMs };
        s.windowOpenedAt = null;
        return append({ lease: { name: NAME, ...s.lease, expiresAt: iso(s.lease.expiresAt) } });
      }
      case "release":
        if (s.lease === null) return { ok: false, code: "ALREADY_RELEASED", details: {} };
        if (s.lease.etag !== command.etag) return { ok: false, code: "NOT_HELD", details: {} };
        s.lease = null;
        return append({});
      case "reset":
        s.lease = null;
        return append({});
    }
  }

  events(): number {
    return this.seq;
  }
}

/** The lock at millisecond `t`: the head's wait may end, its claim window open (the first millisecond it is free) or close. */
function settle(s: ModelLock, t: number): void {
  for (;;) {
    const head = s.queue[0];
    if (head === undefined) return;
    if (head.until <= t) {
      s.queue.shift();
      s.windowOpenedAt = null;
      continue;
    }
    const free = s.lease === null || s.lease.expiresAt <= t;
    if (!free) {
      // Held again (a renew): the head keeps its place, and its window opens afresh when the lock is freed.
      s.windowOpenedAt = null;
      return;
    }
    s.windowOpenedAt ??= t;
    if (t >= s.windowOpenedAt + SETTINGS.claimWindowMs!) {
      s.queue.shift();
      s.windowOpenedAt = null;
      continue;
    }
    return;
  }
}

type Step =
  | { kind: "acquire"; owner: number; ttlMs: number; waitMs: number; withRequestId: boolean }
  | { kind: "retry"; pick: number; waitMs: number }
  | { kind: "claim"; order: number[] }
  | { kind: "release"; stale: boolean }
  | { kind: "renew"; ttlMs: number }
  | { kind: "reset" }
  | { kind: "kill"; pick: number }
  | { kind: "advance"; ms: number }
  | { kind: "jumpBack"; ms: number }
  | { kind: "get" };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("acquire" as const),
      owner: fc.nat({ max: OWNERS.length - 1 }),
      ttlMs: fc.integer({ min: 50, max: 300 }),
      waitMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 600 })),
      withRequestId: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("retry" as const),
      pick: fc.nat(),
      waitMs: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 })),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant("claim" as const), order: fc.array(fc.nat({ max: 30 }), { minLength: 0, maxLength: 8 }) }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("release" as const), stale: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("renew" as const), ttlMs: fc.integer({ min: 50, max: 300 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: "reset" as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("kill" as const), pick: fc.nat() }) },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant("advance" as const),
      ms: fc.oneof(
        { weight: 4, arbitrary: fc.integer({ min: 0, max: 120 }) },
        { weight: 1, arbitrary: fc.integer({ min: 300, max: 1500 }) },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("jumpBack" as const), ms: fc.integer({ min: 1, max: 400 }) }) },
  { weight: 2, arbitrary: fc.constant({ kind: "get" as const }) },
);

describe("the lock with its wait queue against a millisecond-stepping reference model", () => {
  it("agrees on every answer, every event count and every lock.get, under clock jumps and retries by requestId", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 10, maxLength: 60 }), (steps) => {
        const real = new RealSide();
        const model = new ModelSide();
        const drivers = { real: new Driver(real), model: new Driver(model) };
        let clock = T0;
        let nextRequestId = 0;
        /** Requests sent with a requestId: what a retry repeats. */
        const sent: { owner: string; ttlMs: number; requestId: string; joined: boolean }[] = [];
        /** The lease the last grant handed out, for releases and renews by its holder. */
        let holder: { owner: string; etag: string } | undefined;
        const both = (run: (side: Side) => Answer, what: string): Answer => {
          const a = run(real);
          const b = run(model);
          expect(a, `${what} at +${clock - T0} ms`).toEqual(b);
          expect(real.events(), `events after ${what}`).toBe(model.events());
          return a;
        };
        const noteGrant = (answer: Answer) => {
          if (answer.ok && typeof answer.reply === "object" && answer.reply !== null && "lease" in answer.reply) {
            const lease = (answer.reply as { lease: { owner: string; etag: string } }).lease;
            holder = { owner: lease.owner, etag: lease.etag };
          }
        };
        for (const s of steps) {
          switch (s.kind) {
            case "acquire": {
              const owner = OWNERS[s.owner]!;
              const requestId = s.withRequestId ? `r${nextRequestId++}` : undefined;
              const r = drivers.real.acquire(owner, s.ttlMs, s.waitMs, requestId, clock);
              if (requestId !== undefined) sent.push({ owner, ttlMs: s.ttlMs, requestId, joined: r.parkedAs !== undefined });
              const m = drivers.model.acquire(owner, s.ttlMs, s.waitMs, requestId, clock);
              expect(r, `acquire by ${owner} at +${clock - T0} ms`).toEqual(m);
              expect(real.events()).toBe(model.events());
              noteGrant(r.answer);
              break;
            }
            case "retry": {
              if (sent.length === 0) break;
              const original = sent[s.pick % sent.length]!;
              const { owner, ttlMs, requestId } = original;
              const before = real.events();
              const r = drivers.real.acquire(owner, ttlMs, s.waitMs, requestId, clock);
              const m = drivers.model.acquire(owner, ttlMs, s.waitMs, requestId, clock);
              expect(r, `retry of ${requestId} at +${clock - T0} ms`).toEqual(m);
              expect(real.events()).toBe(model.events());
              // A retry of a request that joined keeps its place: it never joins a second time.
              if (original.joined && r.answer.ok && isWaitingReply(r.answer.reply)) expect(real.events()).toBe(before);
              if (r.parkedAs !== undefined) original.joined = true;
              noteGrant(r.answer);
              break;
            }
            case "claim": {
              // Parked requests look in an order the run chooses, as instances race.
              const key = (id: number) => s.order[id % Math.max(1, s.order.length)] ?? 0;
              const order = [...drivers.real.parked.keys()].sort((x, y) => key(x) - key(y) || x - y);
              const r = drivers.real.claimAll(order, clock);
              const m = drivers.model.claimAll(order, clock);
              expect(r, `claims at +${clock - T0} ms`).toEqual(m);
              expect(real.events()).toBe(model.events());
              for (const [, answer] of r) noteGrant(answer);
              break;
            }
            case "release": {
              const etag = holder === undefined || s.stale ? "00000000" : holder.etag;
              both((side) => side.turn({ op: "release", etag }, undefined, clock), "release");
              break;
            }
            case "renew": {
              if (holder === undefined) break;
              const { owner, etag } = holder;
              noteGrant(both((side) => side.turn({ op: "renew", owner, etag, ttlMs: s.ttlMs }, undefined, clock), "renew"));
              break;
            }
            case "reset":
              both((side) => side.turn({ op: "reset" }, undefined, clock), "reset");
              break;
            case "kill": {
              const ids = [...drivers.real.parked.keys()];
              if (ids.length === 0) break;
              const id = ids[s.pick % ids.length]!;
              drivers.real.parked.get(id)!.dead = true;
              drivers.model.parked.get(id)!.dead = true;
              break;
            }
            case "advance":
              clock += s.ms;
              break;
            case "jumpBack":
              clock -= s.ms;
              break;
            case "get":
              break;
          }
          // After every step, both sides read the lock alike.
          both((side) => side.turn({ op: "get" }, undefined, clock), "get");
        }
      }),
      { numRuns: 300 },
    );
  });
});
