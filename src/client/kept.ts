/**
 * What the lock keeper and the session keeper have in common, as their
 * holder sees it: a signal aborted on a loss or a close, the loss itself,
 * whether the lease still counts as held by the local deadline, and an
 * idempotent close.
 */
import { callOnLost, type Heartbeat } from "./heartbeat.ts";

/** The base of a keeper whose lease a {@link Heartbeat} keeps; `E` is its loss. */
export abstract class Kept<E extends Error> implements AsyncDisposable {
  protected readonly controller = new AbortController();
  protected lostWith: E | undefined;
  /** Set by the subclass's constructor. */
  protected abstract readonly heartbeat: Heartbeat<string>;
  private closed: Promise<void> | undefined;

  /** Aborted when the lease is lost (reason: the loss) or closed by its owner. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Why it was lost, or undefined while it is held (or after a clean close). */
  get lost(): E | undefined {
    return this.lostWith;
  }

  /** True while held by this keeper (neither lost, nor past its local deadline, nor closed). */
  get held(): boolean {
    return this.up && this.heartbeat.alive;
  }

  /** Milliseconds left before the lease would end without another beat (by the local, conservative deadline). */
  get remainingMs(): number {
    return this.heartbeat.remainingMs;
  }

  /** Throws the loss (or closure) unless still held; a guard before each fenced step. */
  throwIfLost(): void {
    if (this.held) return;
    if (this.signal.aborted) throw this.signal.reason;
    throw this.expiredLocally();
  }

  /** Stops the beats, aborts the signal and lets go of the lease at the service; idempotent. */
  close(): Promise<void> {
    this.closed ??= this.doClose();
    return this.closed;
  }

  /** `await using` closes at the end of the block. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Neither lost nor closed (nor closing). */
  protected abstract get up(): boolean;
  /** The loss to throw when the local deadline passed before the heartbeat said so. */
  protected abstract expiredLocally(): E;
  protected abstract doClose(): Promise<void>;

  /** Records the loss, aborts the signal with it, then tells `onLost` once. */
  protected report(error: E, onLost: ((error: E) => void) | undefined): void {
    this.lostWith = error;
    this.controller.abort(error);
    callOnLost(onLost, error);
  }
}
