/**
 * The sessions closed, in the order their closes were folded: what a reader
 * that keeps sessions by their end reads to learn of an end brought forward
 * (src/session/state.ts, `CloseLog`). Bounded: the oldest half is dropped
 * past {@link CLOSE_LOG_LIMIT} ids, and a reader whose mark it no longer
 * reaches reads every session again.
 */
import type { CloseLog } from "./state.ts";

/** Ids the log keeps at most. */
export const CLOSE_LOG_LIMIT = 65_536;

/** A bounded, append-only log of closed session ids. */
export class SessionCloseLog implements CloseLog {
  private ids: string[] = [];
  /** The mark of `ids[0]`. */
  private base = 0;

  constructor(private readonly limit = CLOSE_LOG_LIMIT) {}

  /** Records a close of `id`. */
  closed(id: string): void {
    this.ids.push(id);
    if (this.ids.length > this.limit) {
      const dropped = this.ids.length - (this.limit >> 1);
      this.ids = this.ids.slice(dropped);
      this.base += dropped;
    }
  }

  /** Forgets every close: the sessions were read anew (a snapshot restored), so every reader reads them again. */
  reset(): void {
    this.base += this.ids.length + 1;
    this.ids = [];
  }

  mark(): number {
    return this.base + this.ids.length;
  }

  since(mark: number): readonly string[] | undefined {
    if (mark < this.base || mark > this.mark()) return undefined;
    return this.ids.slice(mark - this.base);
  }
}
