/**
 * Replies an own turn waits for: a turn whose append's acknowledgement was
 * lost watches its message id, and learns from whichever fold sees the event
 * first (the follower's or its own) where it landed and what it owes.
 */

/** Where a watched message landed and the reply it owes. */
export interface WatchedReply {
  readonly reply: unknown;
  readonly seq: number;
}

/** Message ids watched by their own turns, and what each was found to owe once folded. */
export class WatchedReplies {
  private readonly watched = new Map<string, WatchedReply | null>();

  /** Whether anything is watched (the fold skips the header look otherwise). */
  get size(): number {
    return this.watched.size;
  }

  /** Starts noting where the event appended with `msgId` lands. */
  watch(msgId: string): void {
    if (!this.watched.has(msgId)) this.watched.set(msgId, null);
  }

  /** Whether `msgId` is watched. */
  has(msgId: string): boolean {
    return this.watched.has(msgId);
  }

  /** Notes where the watched `msgId` landed; ignored when nobody watches it. */
  note(msgId: string, found: WatchedReply): void {
    if (this.watched.has(msgId)) this.watched.set(msgId, found);
  }

  /** Where the watched `msgId` landed and the reply it owes, once folded. */
  found(msgId: string): WatchedReply | undefined {
    return this.watched.get(msgId) ?? undefined;
  }

  /** Stops watching `msgId`. */
  unwatch(msgId: string): void {
    this.watched.delete(msgId);
  }
}
