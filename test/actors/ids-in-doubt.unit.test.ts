/** The copies of shared ids an instance sent: where one may still land, which ids it sent, kept for the window, bounded. */
import { describe, expect, it } from "vitest";
import { IdsInDoubt } from "../../src/actors/ids-in-doubt.ts";

describe("IdsInDoubt", () => {
  it("says whether the instance sent an id before, for the window from its last copy", () => {
    const ids = new IdsInDoubt(100);
    expect(ids.opened("a", "p1", 0)).toBe(false);
    ids.closed("a", "p1", false, 10);
    expect(ids.opened("a", "p2", 50)).toBe(true);
    ids.closed("a", "p2", false, 60);
    expect(ids.sentHere("a", 149)).toBe(true);
    expect(ids.sentHere("a", 150)).toBe(false);
    expect(ids.sentHere("b", 0)).toBe(false);
  });

  it("holds a copy open on its actor while its turn runs, and for the window after it ended in doubt", () => {
    const ids = new IdsInDoubt(100);
    ids.opened("a", "p1", 0);
    expect(ids.on("a", 1)).toBe("p1");
    expect(ids.on("a", 1, "p1")).toBeUndefined();
    ids.closed("a", "p1", true, 20);
    expect(ids.on("a", 119, "p2")).toBe("p1");
    expect(ids.on("a", 120)).toBeUndefined();
    ids.opened("b", "p1", 0);
    ids.closed("b", "p1", false, 5);
    expect(ids.on("b", 6)).toBeUndefined();
    expect(ids.size).toBe(1);
  });

  it("keeps a copy open while any of two turns on one actor still runs", () => {
    const ids = new IdsInDoubt(100);
    ids.opened("a", "p1", 0);
    ids.opened("a", "p1", 1);
    ids.closed("a", "p1", false, 2);
    expect(ids.on("a", 3)).toBe("p1");
    ids.closed("a", "p1", false, 4);
    expect(ids.on("a", 5)).toBeUndefined();
  });

  it("drops the oldest ids past its bound and the expired ones as it takes new ones", () => {
    const ids = new IdsInDoubt(100, 2);
    for (const [n, id] of ["a", "b", "c"].entries()) {
      ids.opened(id, "p", n);
      ids.closed(id, "p", true, n);
    }
    expect([ids.on("a", 3), ids.on("b", 3), ids.on("c", 3)]).toEqual([undefined, "p", "p"]);
    expect([ids.sentHere("a", 3), ids.sentHere("b", 3)]).toEqual([false, true]);
    ids.opened("d", "p", 150);
    expect(ids.size).toBe(1);
  });
});
