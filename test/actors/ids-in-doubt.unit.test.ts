/** The ids an instance left in doubt: kept for the window, the oldest dropped past the bound. */
import { describe, expect, it } from "vitest";
import { IdsInDoubt } from "../../src/actors/ids-in-doubt.ts";

describe("IdsInDoubt", () => {
  it("keeps an id for the window from its last note, then forgets it", () => {
    const ids = new IdsInDoubt(100);
    ids.note("a", 0);
    expect(ids.has("a", 99)).toBe(true);
    ids.note("a", 50);
    expect(ids.has("a", 120)).toBe(true);
    expect(ids.has("a", 150)).toBe(false);
    expect(ids.has("b", 0)).toBe(false);
  });

  it("drops the oldest id past its bound and the expired ones as it notes", () => {
    const ids = new IdsInDoubt(100, 2);
    ids.note("a", 0);
    ids.note("b", 1);
    ids.note("c", 2);
    expect([ids.has("a", 3), ids.has("b", 3), ids.has("c", 3)]).toEqual([false, true, true]);
    ids.note("d", 150);
    expect(ids.size).toBe(1);
  });
});
