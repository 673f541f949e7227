/** Injected time: the service uses the system clock, tests and simulations a manual one. */

/** A source of the current instant, epoch milliseconds. */
export interface Clock {
  now(): number;
}

/** The machine's clock (`Date.now` itself: reading the time runs none of our code). */
export const systemClock: Clock = { now: Date.now };

/** A clock that moves only when told to (simulations and unit tests). */
export class ManualClock implements Clock {
  constructor(private instant: number = Date.parse("2026-01-01T00:00:00.000Z")) {}
  now(): number {
    return this.instant;
  }
  /** Moves the clock forward by `ms`. */
  advance(ms: number): void {
    this.instant += ms;
  }
  /** Sets the clock to an instant (may go backwards, to test skew). */
  set(instant: number): void {
    this.instant = instant;
  }
}
