/** The clock and timers a keeper runs on in unit tests: vi.useFakeTimers drives them (Date.now is faked too). */
import type { KeeperTimers } from "../../src/client/index.ts";

/** Keeper timers on whatever `setTimeout` and `Date.now` are (fake ones under vi.useFakeTimers). */
export const fakeableTimers: KeeperTimers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
