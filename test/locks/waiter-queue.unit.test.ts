/**
 * The lock's persistent wait queue (src/lock/waiter-queue.ts) reads
 * as the array it replaced would, over random sequences of joins, head
 * departures and removals from any earlier version (persistence: a version
 * reads the same after a later one appended to the buffer it shares, and a
 * join on an older version leaves the newer ones as they were); and the
 * queue's arithmetic (advanceQueue, the live count and place) on it gives
 * what the array arithmetic gave, long queues (read through the indexes)
 * as well as short ones.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { advanceQueue, freeFrom, leavesHeadAt, livePlace, queueAt, type QueueSubject } from "../../src/lock/state.ts";
import { INDEXED_FROM, WaiterQueue, type LockWaiter } from "../../src/lock/waiter-queue.ts";

const T0 = Date.parse("2026-12-04T00:00:00.000Z");

/** A waiter at `seq` from generated times (ms after T0). */
function waiterOf(
  seq: number,
  w: { joined: number; wait: number; claim: number; rid: number; owner: number; session: boolean },
): LockWaiter {
  return {
    seq,
    owner: `o${w.owner}`,
    requestId: w.rid === 0 ? null : `r${w.rid}`,
    untilMs: T0 + w.joined + w.wait,
    claimWindowMs: w.claim,
    joinedAtMs: T0 + w.joined,
    ...(w.session ? { session: `s${w.owner}` } : {}),
  };
}

const waiterArb = fc.record({
  joined: fc.integer({ min: 0, max: 200 }),
  // Some waits end before others joined, so waiters whose `until` passed sit behind the head.
  wait: fc.integer({ min: 1, max: 300 }),
  claim: fc.integer({ min: 1, max: 50 }),
  rid: fc.integer({ min: 0, max: 6 }),
  owner: fc.integer({ min: 0, max: 3 }),
  session: fc.boolean(),
});

type Op =
  | {
      readonly op: "push";
      readonly from: number;
      readonly count: number;
      readonly w: Parameters<typeof waiterOf>[1];
      readonly twice: boolean;
    }
  | { readonly op: "drop"; readonly from: number; readonly n: number }
  | { readonly op: "without"; readonly from: number; readonly i: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  // Joins in runs, so that versions grow past the indexes' threshold.
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant("push" as const),
      from: fc.nat(),
      count: fc.integer({ min: 1, max: 24 }),
      w: waiterArb,
      // The first join is folded a second time from the same version (the runtime's turn and the follower both fold it).
      twice: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("drop" as const), from: fc.nat(), n: fc.integer({ min: 0, max: 30 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("without" as const), from: fc.nat(), i: fc.nat({ max: 60 }) }) },
);

/** The array reading of every query the queue answers, at instant `t`. */
function expectReadsAsArray(
  queue: WaiterQueue,
  model: readonly LockWaiter[],
  t: number,
  probe: { rid: number; owner: number; seq: number },
) {
  expect([...queue]).toEqual(model);
  expect(queue.length).toBe(model.length);
  expect(queue.head).toEqual(model[0]);
  expect(queue.at(model.length - 1)).toEqual(model.at(-1));
  expect(queue.at(model.length)).toBeUndefined();
  expect(queue.sessionWaiters).toBe(model.filter((w) => w.session !== undefined).length);
  expect(queue.waitingAt(t)).toBe(model.filter((w) => w.untilMs > t).length);
  for (const w of model.slice(0, 3)) expect(queue.indexOfSeq(w.seq)).toBe(model.indexOf(w));
  expect(queue.indexOfSeq(probe.seq)).toBe(model.findIndex((w) => w.seq === probe.seq));
  const from = probe.owner * 7;
  const after = model.findIndex((w, i) => i >= from && (w.untilMs > t || w.joinedAtMs > t));
  expect(queue.firstAfter(from, t)).toBe(after < 0 ? model.length : after);
  const rid = `r${probe.rid}`;
  const owner = `o${probe.owner}`;
  expect(queue.joinedBy(rid, owner, t)).toEqual(model.find((w) => w.requestId === rid && w.owner === owner && w.untilMs > t));
}

describe("the lock's persistent wait queue", () => {
  it("reads as the array would, every version, after any sequence of joins, departures and removals", () => {
    let indexed = 0;
    fc.assert(
      fc.property(
        fc.array(opArb, { minLength: 1, maxLength: 40 }),
        fc.array(
          fc.record({
            t: fc.integer({ min: -10, max: 520 }),
            rid: fc.nat({ max: 6 }),
            owner: fc.nat({ max: 3 }),
            seq: fc.nat({ max: 400 }),
          }),
          {
            minLength: 1,
            maxLength: 6,
          },
        ),
        (ops, probes) => {
          const versions: WaiterQueue[] = [WaiterQueue.EMPTY];
          const models: (readonly LockWaiter[])[] = [[]];
          let seq = 0;
          for (const op of ops) {
            const v = op.from % versions.length;
            let queue = versions[v]!;
            let model = models[v]!;
            if (op.op === "push") {
              const base = { queue, model };
              for (let k = 0; k < op.count; k++) {
                const w = waiterOf(++seq, { ...op.w, joined: op.w.joined + k, rid: (op.w.rid + k) % 7 });
                queue = queue.push(w);
                model = [...model, w];
                if (op.twice && k === 0) {
                  versions.push(base.queue.push({ ...w }));
                  models.push([...base.model, w]);
                }
              }
            } else if (op.op === "drop") {
              queue = queue.dropFront(op.n);
              model = model.slice(op.n);
            } else {
              queue = queue.without(op.i);
              model = model.filter((_, i) => i !== op.i);
            }
            versions.push(queue);
            models.push(model);
            // Every version, older ones too, still reads as it did; queries move the index's sweep back and forth in time.
            for (const [i, version] of versions.entries()) {
              const probe = probes[i % probes.length]!;
              expectReadsAsArray(version, models[i]!, T0 + probe.t, probe);
            }
            // A queue made for one reading (no indexes, read by walking) reads the same.
            expectReadsAsArray(WaiterQueue.from(model, true), model, T0 + probes[0]!.t, probes[0]!);
          }
          if (models.some((m) => m.length >= INDEXED_FROM)) indexed++;
        },
      ),
      { numRuns: 150 },
    );
    // Long versions were read through the indexes, short ones by walking.
    expect(indexed).toBeGreaterThan(30);
  });

  it("compares by its waiters (two queues of other waiters are not equal), and serialises as their array", () => {
    const a = waiterOf(1, { joined: 0, wait: 10, claim: 5, rid: 1, owner: 1, session: false });
    const b = { ...a, owner: "other" };
    expect(WaiterQueue.from([a])).toEqual(WaiterQueue.from([a]));
    expect(WaiterQueue.from([a])).not.toEqual(WaiterQueue.from([b]));
    expect(WaiterQueue.EMPTY.push(a)).not.toEqual(WaiterQueue.EMPTY);
    expect(JSON.parse(JSON.stringify({ waiters: WaiterQueue.from([a]) }))).toEqual({ waiters: [a] });
    expect(WaiterQueue.from([])).toBe(WaiterQueue.EMPTY);
  });

  it("gives the array arithmetic's queue, head and live count at any instant", () => {
    fc.assert(
      fc.property(
        fc.array(waiterArb, { maxLength: 80 }),
        fc.record({
          lease: fc.option(fc.integer({ min: 0, max: 400 }), { nil: undefined }),
          freed: fc.integer({ min: 0, max: 400 }),
          headSince: fc.integer({ min: 0, max: 400 }),
          now: fc.integer({ min: -20, max: 600 }),
          probe: fc.nat({ max: 90 }),
        }),
        (raw, s) => {
          const waiters = raw.map((w, i) => waiterOf(i + 1, w));
          const base = {
            lease: s.lease === undefined ? null : { expiresAtMs: T0 + s.lease },
            freedAtMs: T0 + s.freed,
            headSinceMs: T0 + s.headSince,
          };
          const now = T0 + s.now;
          const model = arrayAdvance({ ...base, waiters }, now);
          const subject: QueueSubject = { ...base, waiters: WaiterQueue.from(waiters) };
          const advanced = advanceQueue(subject, now);
          expect([...advanced.waiters]).toEqual(model.waiters);
          expect(advanced.headSinceMs).toBe(model.headSinceMs);
          const view = queueAt(subject, now);
          expect(view.head).toBe(model.waiters[0] ?? null);
          expect(view.liveCount).toBe(model.waiters.filter((w) => w.untilMs > now).length);
          expect(view.live).toEqual(model.waiters.filter((w) => w.untilMs > now));
          const place = model.waiters.find((w) => w.seq === s.probe);
          expect(livePlace(subject, now, s.probe)).toBe(place !== undefined && place.untilMs > now ? place : undefined);
        },
      ),
      { numRuns: 400 },
    );
  });
});

/** The queue arithmetic on arrays, as src/lock/state.ts did it before the queue was indexed: the model. */
function arrayAdvance(
  subject: Omit<QueueSubject, "waiters"> & { readonly waiters: readonly LockWaiter[] },
  now: number,
): { waiters: readonly LockWaiter[]; headSinceMs: number } {
  const { waiters } = subject;
  const free = freeFrom(subject as unknown as QueueSubject);
  let headSince = subject.headSinceMs;
  let left = 0;
  while (left < waiters.length) {
    const waiter = waiters[left]!;
    headSince = Math.max(headSince, waiter.joinedAtMs);
    const leaves = leavesHeadAt(waiter, headSince, free);
    if (leaves > now) break;
    headSince = leaves;
    left++;
  }
  if (left === 0 && headSince === subject.headSinceMs) return subject;
  const next = waiters[left];
  return { waiters: waiters.slice(left), headSinceMs: next === undefined ? headSince : Math.max(headSince, next.joinedAtMs) };
}
