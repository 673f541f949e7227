/**
 * One command's turn on one actor, as plain bounded code: the I/O protocol
 * around the kind's pure logic. The actor's state is not here but in its
 * kind's projection, read at each decision.
 *
 *   decide ─ append ──► appending ─ acked ──────────────────────► reply
 *     │ ▲                  │ conflict / duplicate / lost ack twice
 *     │ └──── catching up ◄┘ (wait until the projection passed it)
 *     └─ reply or refusal ─► verifying ─ nothing newer ──► answer
 *                                       └ something newer ─► decide
 *
 * Every step is given the time the command has left; the runtime bounds the
 * turn as a whole as well (src/actors/turn-deadlines.ts), so a step that
 * ignores its own deadline cannot hold the answer. A turn that gives up
 * while an append of its own may still be stored answers "in doubt", never
 * the contract's "nothing was changed" (src/actors/append-doubt.ts). Lease expiry is never a
 * timer here: it is arithmetic on the decision's instant.
 */
import { LogUnavailableError, msgIdVariant, WrongLastSequenceError, type AppendResult } from "../events/event-log.ts";
import { type EventEnvelope } from "../events/envelope.ts";
import type { ProjectionRecord } from "../projections/kind-fold.ts";
import type { Command } from "./actor-logic.ts";
import type { Decision } from "./decision.ts";
import { AppendDoubt } from "./append-doubt.ts";
import { inDoubt, isInDoubt, unavailable, type TurnResult } from "./turn-result.ts";
import { forbidden } from "../contract/errors.ts";
import { actsFor } from "../contract/operators.ts";

/** One command waiting for, or taking, its turn. */
export interface PendingCommand {
  readonly command: Command;
  readonly requestId: string | undefined;
  /** When a durable command was first sent (epoch ms): a reply remembered since then answers it. */
  readonly requestedAt: number | undefined;
  /** `Nats-Msg-Id` of the event this command may append (stable across retries). */
  readonly msgId: string;
  /** What tells this request from another reusing its requestId. */
  readonly fingerprint?: string | undefined;
  /** Who sent it (`""`: unknown), and whether that principal is an operator. */
  readonly principal?: string | undefined;
  readonly operator?: boolean | undefined;
  /** The instant on the runtime's timer clock by which the command must be answered. */
  readonly deadline: number;
  /**
   * `msgId` is the same whichever id of the kind the command lands on (a
   * proxy grant: one requestId, one grant, whichever proxy takes it), so a
   * copy JetStream holds but has not stored may be on another actor's subject.
   */
  readonly msgIdSharedByKind?: boolean;
}

/** An event ready to append: its envelope and the exact bytes (a retry sends the same ones). */
export interface EncodedEvent {
  readonly envelope: EventEnvelope;
  readonly payload: Uint8Array;
}

/** What the append step is given. */
export interface AppendInput {
  readonly id: string;
  readonly event: EncodedEvent;
  readonly expectedSeq: number;
  readonly msgId: string;
  /** The command's op and requestId, for the runtime's log lines. */
  readonly op: string;
  readonly requestId: string | undefined;
  readonly timeoutMs: number;
}

/** The effects and pure parts a turn uses, implemented by the runtime (faked in the turn's own tests). */
export interface TurnPorts {
  /** The decision clock (epoch ms): injected, simulated in tests. */
  now(): number;
  /** The timer clock deadlines are measured on (ms). */
  monotonic(): number;
  /** The id's record in its kind's projection. */
  record(id: string): ProjectionRecord<unknown>;
  /** A reply remembered for `msgId` at or after `since`, if any. */
  remembered(msgId: string, since: number): { reply: unknown } | undefined;
  /** Whether another request took `requestId` at or after `since` (see {@link ActorRuntime.requestIdReused}). */
  requestIdReused(requestId: string, fingerprint: string | undefined, since: number): boolean;
  /** Whether a remembered `reply` answers this repeat of `command` (the kind's `answersRepeat`; else it is decided again). */
  answersRepeat(reply: unknown, command: Command): boolean;
  decide(state: unknown, command: Command, now: number): Decision;
  /** The principal that created what a holder-bound command acts on (the kind's `holderOf`). */
  holderOf(state: unknown, command: Command, now: number): string | undefined;
  /** The event a decision records, stamped with the decision's instant and the request's principal. */
  encode(id: string, decision: Decision, now: number, requestId: string | undefined, by: string | undefined): EncodedEvent;
  /** Applies this turn's own acknowledged event to the projection and returns the reply it owes. */
  applyOwn(id: string, base: ProjectionRecord<unknown>, event: EncodedEvent, seq: number, msgId: string): unknown;
  /**
   * A turn on `id` sends its first copy of a shared `msgId`; whether the
   * stream took one from this instance before (src/actors/ids-in-doubt.ts).
   */
  copyOpened(msgId: string, id: string): boolean;
  /** That turn ended: whether the stream took a copy of it, and whether the turn ended in doubt. */
  copyClosed(msgId: string, id: string, outcome: { readonly taken: boolean; readonly inDoubt: boolean }): void;
  /** An actor other than `id` where a copy of the shared `msgId` this instance sent may still be stored. */
  openCopyElsewhere(msgId: string, id: string): string | undefined;
  /** Where this turn's own event was found in the stream (by any folder), with its reply. */
  replyRecordedFor(msgId: string): { reply: unknown } | undefined;
  watch(msgId: string): void;
  unwatch(msgId: string): void;
  /** Appends with the expected subject sequence and message id; bounded by `timeoutMs`. */
  append(input: AppendInput): Promise<AppendResult>;
  /** Resolves once the projection holds the last event on the actor's subject; rejects at `timeoutMs`. */
  verify(id: string, timeoutMs: number): Promise<void>;
  /** Resolves once the projection has folded stream sequence `seq`; rejects at `timeoutMs`. */
  catchUp(id: string, seq: number, timeoutMs: number): Promise<void>;
  /** How long a requestId is remembered (the dedup window). */
  readonly dedupWindowMs: number;
  /** Decisions per command before giving up under contention. */
  readonly maxAttempts: number;
}

/** The answer of a turn that ran out of time: in doubt while its own event may still be stored. */
export function timedOut(doubt: AppendDoubt): TurnResult {
  return doubt.open
    ? inDoubt("no answer from the event stream in time, and this command's event may still be stored", 1000)
    : unavailable("no answer from the event stream in time", 1000);
}

/**
 * Runs one command's turn on actor `id` to its answer. Never throws. `doubt`
 * is the turn's record of appends whose fate it does not know, shared with
 * the runtime's deadline sweep so that a turn answered by the sweep is not
 * told "nothing was changed" either.
 */
export function runTurn(ports: TurnPorts, id: string, pending: PendingCommand, doubt = new AppendDoubt()): Promise<TurnResult> {
  // Only a shared id's copies are told to the instance: every other turn runs as it is.
  if (pending.msgIdSharedByKind !== true) return decideAndAppend(ports, id, pending, doubt, undefined);
  const copies: Copies = { opened: false, taken: false };
  return decideAndAppend(ports, id, pending, doubt, copies).then((result) => {
    // A copy the stream took from this turn may still be stored only when the turn ends in doubt.
    if (copies.opened) ports.copyClosed(pending.msgId, id, { taken: copies.taken, inDoubt: isInDoubt(result) });
    return result;
  });
}

/** What a turn did with a shared id: whether it sent a copy, and whether the stream took one (not only called it a duplicate). */
interface Copies {
  opened: boolean;
  taken: boolean;
}

/** The turn itself; `copies` is given for a shared id, and records what became of its copies. */
async function decideAndAppend(
  ports: TurnPorts,
  id: string,
  pending: PendingCommand,
  doubt: AppendDoubt,
  copies: Copies | undefined,
): Promise<TurnResult> {
  const left = (): number => pending.deadline - ports.monotonic();
  if (left() <= 0) return unavailable("the request waited past its deadline for its turn", 0);
  let attempts = 0;
  let lostAcks = 0;
  let msgId = pending.msgId;
  let watching = false;
  // A shared id (`copies` given): whether the stream took a copy from this instance before this turn (else a
  // copy it holds but did not store, and no copy of this turn took, is another instance's).
  let takenBefore = false;
  try {
    for (;;) {
      if (left() <= 0) return timedOut(doubt);
      const base = ports.record(id);
      if (watching) {
        // Back from a wait after an append: the turn's own event may have been folded since (a lost ack, stored after all).
        const found = ports.replyRecordedFor(pending.msgId);
        if (found !== undefined) return { ok: true, reply: found.reply };
        doubt.settledUpTo(base.seq);
        if (attempts >= ports.maxAttempts) {
          return doubt.open
            ? inDoubt("the event stream did not acknowledge the append", 250)
            : unavailable(
                lostAcks > 0 ? "the event stream did not acknowledge the append" : `gave up after ${attempts} conflicting attempts`,
                250,
              );
        }
      }
      const now = Math.max(ports.now(), base.atMs);
      if (pending.requestId !== undefined) {
        // A durable command published again is the same request: the window runs back from when this copy was sent.
        const since = (pending.requestedAt ?? now) - ports.dedupWindowMs;
        if (ports.requestIdReused(pending.requestId, pending.fingerprint, since)) return reused(pending.requestId);
        const remembered = ports.remembered(pending.msgId, since);
        if (remembered !== undefined) {
          if (ports.answersRepeat(remembered.reply, pending.command)) return { ok: true, reply: remembered.reply };
          // The request's id is on the event that earned that reply, in JetStream's duplicate window: what this repeat appends goes under a variant.
          if (msgId === pending.msgId) msgId = msgIdVariant(pending.msgId, 0);
        }
      }
      const decision = holderCheck(ports, base.state, pending, now, ports.decide(base.state, pending.command, now));
      attempts++;
      if (decision.outcome !== "append") {
        // A reply or refusal is answered only once the projection is known to hold the subject's last event.
        try {
          await ports.verify(id, left());
        } catch (error) {
          return failed(error, left(), doubt);
        }
        if (ports.record(id).seq !== base.seq) continue;
        // Decided on the sequence a lost append of this turn expected: that append may still land and make this answer wrong.
        if (doubt.open) return inDoubt("an append of this command whose acknowledgement was lost may still be stored", 250);
        if (decision.outcome === "reject") return { ok: false, rejection: decision.rejection };
        return { ok: true, reply: decision.reply };
      }
      const event = ports.encode(id, decision, now, pending.requestId, pending.principal);
      if (!watching) {
        ports.watch(pending.msgId);
        watching = true;
      }
      let waitSeq = 0;
      let duplicate = false;
      for (;;) {
        if (copies !== undefined && !copies.opened) {
          takenBefore = ports.copyOpened(pending.msgId, id);
          copies.opened = true;
        }
        doubt.sent(base.seq);
        try {
          const ack = await ports.append({
            id,
            event,
            expectedSeq: base.seq,
            msgId,
            op: pending.command.op,
            requestId: pending.requestId,
            timeoutMs: Math.max(1, left()),
          });
          if (!ack.duplicate) {
            if (copies !== undefined) copies.taken = true;
            return { ok: true, reply: ports.applyOwn(id, base, event, ack.seq, msgId) };
          }
          // Our message id was stored already (a retry after a lost ack): find where, then answer from it.
          // At sequence 0 the leader holds it but has not stored it: a copy still in flight, or (nats-server 2.10 in a
          // cluster) one that was refused after the id was taken, which stays a duplicate for the stream's window.
          doubt.answered();
          if (ack.seq === 0) {
            if (copies !== undefined) {
              // A copy on another actor's subject, or another instance's anywhere: no expected sequence keeps a variant
              // here from landing beside it. A variant is safe only when the held copy is this instance's, on this actor.
              const elsewhere = ports.openCopyElsewhere(pending.msgId, id);
              if (elsewhere !== undefined) return inDoubt(`an event with this requestId may still be stored for ${elsewhere}`, 250);
              if (!takenBefore && !copies.taken)
                return inDoubt("an event with this requestId sent by another instance may still be stored", 250);
            }
            doubt.lost();
          }
          waitSeq = ack.seq;
          duplicate = true;
          break;
        } catch (error) {
          // Refused by its expected sequence or left without an answer: the stream may have taken the id.
          if (copies !== undefined)
            copies.taken ||= error instanceof WrongLastSequenceError || (error instanceof LogUnavailableError && error.ambiguous);
          // Someone else wrote: wait until the projection has their event, then decide again.
          if (error instanceof WrongLastSequenceError) {
            doubt.answered();
            waitSeq = error.actual ?? 0;
            break;
          }
          if (!(error instanceof LogUnavailableError && error.ambiguous)) {
            doubt.answered();
            return failed(error, left(), doubt);
          }
          doubt.lost();
          lostAcks++;
          if (left() <= 0) return timedOut(doubt);
          // The ack was lost: publish again with the same message id and expected
          // sequence. JetStream stores it at most once, so this settles the question.
          if (lostAcks === 1) continue;
          waitSeq = 0;
          break;
        }
      }
      try {
        await (waitSeq > 0 ? ports.catchUp(id, waitSeq, left()) : ports.verify(id, left()));
      } catch (error) {
        return failed(error, left(), doubt);
      }
      // The id is held by JetStream's duplicate window but no event carries it: try again under a variant.
      if (duplicate) msgId = msgIdVariant(pending.msgId, attempts);
    }
  } catch (error) {
    // A port that threw where it should not have (a bug below): the caller still gets an answer.
    return failed(error, left(), doubt);
  } finally {
    if (watching) ports.unwatch(pending.msgId);
  }
}

/** Refusals that come before a holder's FORBIDDEN in the contract's error order. */
const BEFORE_HOLDER = new Set(["UNAUTHENTICATED", "BAD_REQUEST", "REQUEST_ID_REUSED", "TTL_EXCEEDS_MAX", "FORBIDDEN", "CORRUPT"]);

/**
 * `decision`, or FORBIDDEN when the command is holder-bound and the lease or
 * session it acts on was created by another principal than the requester's,
 * who is no operator: first among the state checks, after the refusals
 * that precede it. A lease created without a principal binds nobody.
 */
function holderCheck(ports: TurnPorts, state: unknown, pending: PendingCommand, now: number, decision: Decision): Decision {
  if (pending.operator === true) return decision;
  if (decision.outcome === "reject" && BEFORE_HOLDER.has(decision.rejection.code)) return decision;
  const holder = ports.holderOf(state, pending.command, now);
  const principal = pending.principal ?? "";
  if (holder === undefined || holder === "" || actsFor(principal, holder)) return decision;
  return { outcome: "reject", rejection: forbidden(`it was created by ${holder}`, principal) };
}

/** The refusal of a request whose requestId another request took within the dedup window. */
export function reused(requestId: string): TurnResult {
  const message = `requestId ${JSON.stringify(requestId)} was used within the dedup window by another request (another op, body or principal)`;
  return { ok: false, rejection: { code: "REQUEST_ID_REUSED", message, details: { requestId } } };
}

/** The answer for a step that failed: out of time, or the stream could not be used. */
function failed(error: unknown, leftMs: number, doubt: AppendDoubt): TurnResult {
  if (leftMs <= 0) return timedOut(doubt);
  const cause = error instanceof Error ? error.message : String(error);
  return doubt.open ? inDoubt(cause, 250) : unavailable(cause, 250);
}
