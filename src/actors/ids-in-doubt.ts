/**
 * Message ids this instance left in doubt, with the actor whose subject the
 * doubtful append went to: a turn that ended without knowing whether its
 * event was stored. A proxy grant's id is shared by every proxy, so when a
 * retry of that request meets JetStream's "duplicate at sequence 0" on
 * another proxy, the copy the stream holds may be the earlier attempt's,
 * still able to land there; the retry must then not work around it with a
 * variant id (two grants of one request). On the same proxy it may: the
 * expected subject sequence lets at most one of the two land. Remembered for
 * JetStream's duplicate window, bounded in count.
 */
export class IdsInDoubt {
  /** msgId → the actor it was left in doubt on and when it is forgotten (timer clock), in the order noted. */
  private readonly until = new Map<string, { readonly id: string; readonly until: number }>();

  constructor(
    private readonly windowMs: number,
    private readonly maxIds = 10_000,
  ) {}

  /** `msgId`'s turn on actor `id` ended in doubt at `now`. */
  note(msgId: string, id: string, now: number): void {
    this.until.delete(msgId);
    this.until.set(msgId, { id, until: now + this.windowMs });
    this.forgetExpired(now);
    if (this.until.size > this.maxIds) this.until.delete(this.until.keys().next().value!);
  }

  /** The actor a turn of `msgId` ended in doubt on, within the window before `now`. */
  on(msgId: string, now: number): string | undefined {
    const entry = this.until.get(msgId);
    return entry !== undefined && entry.until > now ? entry.id : undefined;
  }

  get size(): number {
    return this.until.size;
  }

  private forgetExpired(now: number): void {
    for (const [msgId, { until }] of this.until) {
      if (until > now) return;
      this.until.delete(msgId);
    }
  }
}
