/** The ids an instance left in doubt: where, kept for the window, the oldest dropped past the bound. */
import { describe, expect, it } from "vitest";
import { IdsInDoubt } from "../../src/actors/actor-runtime.ts";

describe("IdsInDoubt", () => {
  it("keeps an id and the actor it was left on for the window from its last note, then forgets it", () => {
    const ids = new IdsInDoubt(100);
    ids.note("a", "p1", 0);
    expect(ids.on("a", 99)).toBe("p1");
    ids.note("a", "p2", 50);
    expect(ids.on("a", 120)).toBe("p2");
    expect(ids.on("a", 150)).toBeUndefined();
    expect(ids.on("b", 0)).toBeUndefined();
  });

  it("drops the oldest id past its bound and the expired ones as it notes", () => {
    const ids = new IdsInDoubt(100, 2);
    ids.note("a", "p", 0);
    ids.note("b", "p", 1);
    ids.note("c", "p", 2);
    expect([ids.on("a", 3), ids.on("b", 3), ids.on("c", 3)]).toEqual([undefined, "p", "p"]);
    ids.note("d", "p", 150);
    expect(ids.size).toBe(1);
  });
});
