/**
 * Message ids this instance left in doubt: a turn that ended without knowing
 * whether its event was stored. A proxy grant's id is shared by every proxy,
 * so when a retry of that request meets JetStream's "duplicate at sequence
 * 0" on another proxy, the copy the stream holds may be the earlier
 * attempt's, still able to land; only then must the retry not work around
 * it with a variant id (which would make two grants of one request).
 * Remembered for JetStream's duplicate window, bounded in count.
 */
export class IdsInDoubt {
  /** msgId → when it is forgotten (timer clock), in the order noted. */
  private readonly until = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly maxIds = 10_000,
  ) {}

  /** `msgId`'s turn ended in doubt at `now`. */
  note(msgId: string, now: number): void {
    this.until.delete(msgId);
    this.until.set(msgId, now + this.windowMs);
    this.forgetExpired(now);
    if (this.until.size > this.maxIds) this.until.delete(this.until.keys().next().value!);
  }

  /** Whether a turn of `msgId` ended in doubt within the window before `now`. */
  has(msgId: string, now: number): boolean {
    const until = this.until.get(msgId);
    return until !== undefined && until > now;
  }

  get size(): number {
    return this.until.size;
  }

  private forgetExpired(now: number): void {
    for (const [msgId, until] of this.until) {
      if (until > now) return;
      this.until.delete(msgId);
    }
  }
}
