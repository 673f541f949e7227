/**
 * Whether a turn has an append out whose fate it does not know. The
 * contract's `UNAVAILABLE` says "nothing was changed", so a turn may only
 * answer it while no event of its own can still land: an append in flight,
 * or one whose acknowledgement was lost (a timeout, or a duplicate that
 * JetStream has not stored yet), may be stored later — after a partition
 * heals, the leader that took it can still commit it.
 *
 * A lost append carried the expected subject sequence it was decided on, so
 * it can only ever land right after that sequence. Once the actor's subject
 * is known to have moved past it, and the turn's own event is not what moved
 * it, the lost append can never be stored and the doubt is settled.
 */
export class AppendDoubt {
  /** The expected subject sequence of an append whose acknowledgement was lost. */
  private lostAt: number | undefined;
  /** The expected subject sequence of the append last sent. */
  private pendingAt = 0;
  private inFlight = false;

  /** Whether an answer of "nothing was changed" could be wrong now. */
  get open(): boolean {
    return this.inFlight || this.lostAt !== undefined;
  }

  /** An append with expected subject sequence `expectedSeq` is sent. */
  sent(expectedSeq: number): void {
    this.inFlight = true;
    this.pendingAt = expectedSeq;
  }

  /** The append got an answer that says whether it was stored (acknowledged, or refused by the stream). */
  answered(): void {
    this.inFlight = false;
  }

  /** The append got no answer that says whether it was stored: it may still land after `expectedSeq`. */
  lost(): void {
    this.inFlight = false;
    // A turn only sends again on the sequence a lost append expected, or on a later one once that one is settled.
    this.lostAt ??= this.pendingAt;
  }

  /**
   * The actor's subject is known to end at `subjectSeq` and the turn's own
   * event is not among what was folded: a lost append that expected an
   * earlier sequence can no longer be stored.
   */
  settledUpTo(subjectSeq: number): void {
    if (this.lostAt !== undefined && subjectSeq > this.lostAt) this.lostAt = undefined;
  }
}
