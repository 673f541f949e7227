/**
 * The lock history the restart benches fold: each lock acquired, then
 * released, round after round, every event with a `requestId` and the
 * message id the service would append it with (bench/restart.ts writes it
 * into a stream, bench/backlog-fold.ts folds it without one).
 */
import type { Subjects } from "../src/contract/subjects.ts";
import { requestMsgId } from "../src/events/envelope.ts";
import type { LockEvent } from "../src/lock/events.ts";

/** One event of the history, where it goes and the message id it is appended with. */
export interface HistoryEvent {
  readonly subject: string;
  readonly event: LockEvent;
  readonly msgId: string;
}

/** The `written`-th event: lock `i`'s `type` in round `g`, decided at `at`. */
export function lockHistoryEvent(
  subjects: Subjects,
  type: "LockAcquired" | "LockReleased",
  i: number,
  g: number,
  written: number,
  at: Date,
): HistoryEvent {
  const id = `lock-${i}`;
  const head = { v: 1, at: at.toISOString(), kind: "lock", id, requestId: `req-${written}` } as const;
  const owner = `owner-${i % 97}`;
  const event: LockEvent =
    type === "LockAcquired"
      ? {
          type,
          ...head,
          data: { owner, generation: g, ttlMs: 30_000, expiresAt: new Date(at.getTime() + 30_000).toISOString(), previousOwner: "" },
        }
      : { type, ...head, data: { owner, generation: g } };
  const subject = subjects.event("lock", id);
  return { subject, event, msgId: requestMsgId(subject, type === "LockAcquired" ? "acquire" : "release", `req-${written}`) };
}
