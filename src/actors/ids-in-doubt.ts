/**
 * The copies of message ids shared by a kind's actors (a proxy grant's) that
 * this instance sent: on which actors a copy may still land (its turn is
 * still running, or ended without knowing whether it was stored), and which
 * ids the stream took a copy of from it. A retry that meets JetStream's "duplicate at sequence
 * 0" for such an id may append under a variant only where no other copy can
 * land beside it: on the actor its own copies went to, where the expected
 * subject sequence lets at most one of them be stored, and only when the
 * copy the stream holds is one of this instance's. A copy left on another
 * actor, or one this instance never sent (another instance's, in flight or
 * held by a leader), could be stored too: two grants of one request.
 * Remembered for JetStream's duplicate window, bounded in count; forgetting
 * only makes a retry wait in doubt.
 */
export class IdsInDoubt {
  /** msgId → per actor, the turns still sending copies there and until when a copy left in doubt there may land (timer clock). */
  private readonly open = new Map<string, Map<string, { turns: number; doubtUntil: number }>>();
  /** msgId → until when a copy the stream took counts as this instance's (timer clock), in the order last taken. */
  private readonly sent = new Map<string, number>();

  constructor(
    private readonly windowMs: number,
    private readonly maxIds = 10_000,
  ) {}

  /** A turn on actor `id` is about to send its first copy of `msgId` at `now`; whether the stream took one from this instance before. */
  opened(msgId: string, id: string, now: number): boolean {
    const before = this.sentHere(msgId, now);
    const actors = this.open.get(msgId) ?? new Map<string, { turns: number; doubtUntil: number }>();
    const entry = actors.get(id);
    actors.set(id, { turns: (entry?.turns ?? 0) + 1, doubtUntil: entry?.doubtUntil ?? 0 });
    this.open.delete(msgId);
    this.open.set(msgId, actors);
    this.forget(now);
    return before;
  }

  /**
   * That turn ended at `now`. `taken`: the stream may have taken a copy it
   * sent (stored it, refused it by its expected sequence, or left the writer
   * without an answer), not only called it a duplicate; `inDoubt`: such a
   * copy may still be stored on `id` within the window.
   */
  closed(msgId: string, id: string, outcome: { readonly taken: boolean; readonly inDoubt: boolean }, now: number): void {
    if (outcome.taken) {
      this.sent.delete(msgId);
      this.sent.set(msgId, now + this.windowMs);
    }
    const inDoubt = outcome.taken && outcome.inDoubt;
    const actors = this.open.get(msgId);
    const entry = actors?.get(id);
    if (actors === undefined || entry === undefined) return;
    const doubtUntil = inDoubt ? now + this.windowMs : entry.doubtUntil;
    if (entry.turns <= 1 && doubtUntil <= now) actors.delete(id);
    else actors.set(id, { turns: entry.turns - 1, doubtUntil });
    if (actors.size === 0) this.open.delete(msgId);
  }

  /** An actor other than `except` where a copy of `msgId` this instance sent may still land at `now`. */
  on(msgId: string, now: number, except?: string): string | undefined {
    for (const [id, { turns, doubtUntil }] of this.open.get(msgId) ?? []) {
      if (id !== except && (turns > 0 || doubtUntil > now)) return id;
    }
    return undefined;
  }

  /** Whether the stream took a copy of `msgId` from this instance within the window before `now`. */
  sentHere(msgId: string, now: number): boolean {
    return (this.sent.get(msgId) ?? 0) > now;
  }

  /** How many ids have a copy that may still land (0: nothing to look up). */
  get size(): number {
    return this.open.size;
  }

  private forget(now: number): void {
    for (const [msgId, until] of this.sent) {
      if (until > now && this.sent.size <= this.maxIds) break;
      this.sent.delete(msgId);
    }
    for (const [msgId, actors] of this.open) {
      for (const [id, { turns, doubtUntil }] of actors) if (turns === 0 && doubtUntil <= now) actors.delete(id);
      if (actors.size === 0) this.open.delete(msgId);
      else if (this.open.size <= this.maxIds) break;
      else this.open.delete(msgId);
    }
  }
}
