/**
 * Whether the event stream's store has lately refused appends for lack of
 * space (JetStream's "insufficient resources": the server's `max_file_store`
 * or the disk is full). `/readyz` reads it. No probe can tell that space came
 * back without writing, so an accepted append clears it at once, and a
 * refusal counts only for a while: an instance that nobody writes to goes
 * back to ready, and the next refused append marks it again (an orchestrator
 * that took every instance out of rotation would otherwise never see one
 * recover).
 */

/** JetStream's API error code for a store at its limits. */
export const INSUFFICIENT_RESOURCES = 10023;

/** How long one refusal keeps the store counted as full, ms. */
export const STORE_FULL_FOR_MS = 10_000;

/** Tracks the store's last refusal; time is a monotonic clock (injected in tests). */
export class StoreSpaceWatch {
  private refusedAt: number | undefined;

  constructor(
    private readonly now: () => number = () => performance.now(),
    private readonly fullForMs: number = STORE_FULL_FOR_MS,
  ) {}

  /** An append was refused for lack of space. */
  refused(): void {
    this.refusedAt = this.now();
  }

  /** An append was stored: there is space again. */
  accepted(): void {
    this.refusedAt = undefined;
  }

  /** True while the last refusal is recent and no append has been stored since. */
  get full(): boolean {
    return this.refusedAt !== undefined && this.now() - this.refusedAt < this.fullForMs;
  }
}
