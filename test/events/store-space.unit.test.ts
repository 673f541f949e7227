import { describe, expect, it } from "vitest";
import { StoreSpaceWatch } from "../../src/events/jetstream-event-log.ts";

describe("StoreSpaceWatch", () => {
  const watchAt = () => {
    let now = 1000;
    const watch = new StoreSpaceWatch(() => now, 10_000);
    return { watch, advance: (ms: number) => (now += ms) };
  };

  it("is not full until an append is refused", () => {
    expect(watchAt().watch.full).toBe(false);
  });

  it("is full after a refusal until an append is stored", () => {
    const { watch, advance } = watchAt();
    watch.refused();
    advance(9_999);
    expect(watch.full).toBe(true);
    watch.accepted();
    expect(watch.full).toBe(false);
  });

  it("forgets a refusal after its window, and a new refusal counts again", () => {
    const { watch, advance } = watchAt();
    watch.refused();
    advance(10_000);
    expect(watch.full).toBe(false);
    watch.refused();
    expect(watch.full).toBe(true);
  });
});
