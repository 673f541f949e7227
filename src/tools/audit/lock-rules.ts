/** The audit's lock rules: one holder at a time, generations that count up by one, and the wait queue's order. */
import { instantMs } from "../../events/envelope.ts";
import { isLockEvent } from "../../lock/events.ts";
import { leaseExpiresAt, type LockState } from "../../lock/state.ts";
import { livePlace, queueAt } from "../../lock/state.ts";
import { applySessionEnds } from "../../lock/session-waiters.ts";
import { sessionLiveAt } from "../../session/state.ts";
import { cell } from "../table.ts";
import { iso } from "../time.ts";
import type { KindRules, Report } from "./kind-rules.ts";

const RULES = {
  "lock-two-holders": "a lock is never acquired while its lease is unexpired (at the acquisition's instant): never two unexpired holders",
  "lock-generation-not-plus-one": "each acquisition's generation is exactly one more than the highest before it",
  "lock-generation-repeated": "no acquisition reuses a generation already granted (or carried by a reset)",
  "lock-renew-not-holder": "a renewal applies to the current lease: same owner and generation (what the current etag stands for)",
  "lock-release-not-holder": "a release applies to the current lease: same owner and generation",
  "lock-previous-owner-mismatch":
    "an acquisition's previousOwner is the owner of the (expired) lease it replaces, or empty when the lock was free",
  "lock-lease-beyond-max-ttl":
    "no lease ends more than maxTtlMs (`--max-ttl-ms`) after the event that wrote it (the service would answer CORRUPT)",
  "lock-queue-order":
    "first come, first served: while the head of a lock's wait queue is in its claim window, the lock is granted to that waiter only (and a grant to a waiter names a live place in the queue)",
  "lock-acquired-under-ended-session":
    "a lock is acquired under a session only while the session is live (opened, not closed, its expiresAt not passed) and by its owner (1.2)",
} as const;

type LockRule = keyof typeof RULES;

/** Lock rules. */
export const lockRules: KindRules<LockRule> = {
  kind: "lock",
  rules: RULES,
  checker: ({ maxTtlMs, fold }) => {
    const checkTtl = (type: string, expiresAt: string, atMs: number, report: Report<LockRule>): void => {
      const ahead = instantMs(expiresAt) - atMs;
      if (ahead > maxTtlMs)
        report("lock-lease-beyond-max-ttl", `${type} writes a lease ending ${ahead} ms after the event, above maxTtlMs ${maxTtlMs}`);
    };
    return {
      check(event, _id, state, { atMs }, report) {
        if (!isLockEvent(event)) return;
        // The sessions' ends the event recorded were the lock's state when it was decided (as the fold reads them).
        const before = applySessionEnds(state as LockState, event.data.sessionEnds);
        const held = before.lease;
        switch (event.type) {
          case "LockAcquired": {
            const d = event.data;
            if (d.session !== undefined) {
              const session = fold.get("session", d.session);
              if (!sessionLiveAt(session, atMs) || session.owner !== d.owner) {
                report(
                  "lock-acquired-under-ended-session",
                  `acquired by ${cell(d.owner)} under session ${cell(d.session)}, ${!session.opened ? "which was never opened" : sessionLiveAt(session, atMs) ? `which is ${cell(session.owner)}'s` : `which had ended at ${iso(Math.min(session.expiresAtMs, session.closedAtMs ?? Infinity))}`}`,
                );
              }
            }
            const queue = queueAt(before, atMs);
            if (queue.head !== null && queue.headMayClaim && d.waiterSeq !== queue.head.seq) {
              report(
                "lock-queue-order",
                `acquired by ${cell(d.owner)} while waiter ${cell(queue.head.owner)} (queued at sequence ${queue.head.seq}) was in its claim window until ${iso(queue.headLeavesAtMs)}`,
              );
            } else if (d.waiterSeq !== undefined && livePlace(before, atMs, d.waiterSeq) === undefined) {
              report("lock-queue-order", `granted to the place queued at sequence ${d.waiterSeq}, which is not in the queue`);
            }
            if (held !== null && held.expiresAtMs > atMs) {
              report(
                "lock-two-holders",
                `acquired by ${cell(d.owner)} (generation ${d.generation}) while ${cell(held.owner)} holds generation ${held.generation} until ${leaseExpiresAt(held)}`,
              );
            }
            if (d.generation <= before.generation) {
              report("lock-generation-repeated", `generation ${d.generation} granted again (highest so far ${before.generation})`);
            } else if (d.generation !== before.generation + 1) {
              report(
                "lock-generation-not-plus-one",
                `generation ${d.generation} after ${before.generation} (expected ${before.generation + 1})`,
              );
            }
            const expected = held?.owner ?? "";
            if (d.previousOwner !== expected) {
              report(
                "lock-previous-owner-mismatch",
                `previousOwner ${JSON.stringify(d.previousOwner)}, but ${held === null ? "the lock was free" : `the lease it replaces is ${JSON.stringify(held.owner)}'s`}`,
              );
            }
            checkTtl(event.type, d.expiresAt, atMs, report);
            break;
          }
          case "LockRenewed": {
            const d = event.data;
            if (held === null || held.owner !== d.owner || held.generation !== d.generation) {
              report("lock-renew-not-holder", `renewed by ${cell(d.owner)} at generation ${d.generation}, but ${describeLease(held)}`);
            }
            checkTtl(event.type, d.expiresAt, atMs, report);
            break;
          }
          case "LockReleased": {
            const d = event.data;
            if (held === null || held.owner !== d.owner || held.generation !== d.generation) {
              report("lock-release-not-holder", `released by ${cell(d.owner)} at generation ${d.generation}, but ${describeLease(held)}`);
            }
            break;
          }
          case "LockReset":
          case "LockWaiterQueued":
            break;
        }
      },
    };
  },
};

function describeLease(held: LockState["lease"]): string {
  return held === null ? "the lock has no lease" : `the lease is ${cell(held.owner)}'s at generation ${held.generation}`;
}
