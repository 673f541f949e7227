/** The copies of shared ids an instance sent: where one may still land, which ids the stream took from it, kept for the window, bounded. */
import { describe, expect, it } from "vitest";
import { IdsInDoubt } from "../../src/actors/actor-runtime.ts";

const TAKEN = { taken: true, inDoubt: false };
const IN_DOUBT = { taken: true, inDoubt: true };

describe("IdsInDoubt", () => {
  it("says whether the stream took a copy of an id from this instance, for the window from the last turn that did", () => {
    const ids = new IdsInDoubt(100);
    expect(ids.opened("a", "p1", 0)).toBe(false);
    ids.closed("a", "p1", TAKEN, 10);
    expect(ids.opened("a", "p2", 50)).toBe(true);
    ids.closed("a", "p2", TAKEN, 60);
    expect(ids.sentHere("a", 159)).toBe(true);
    expect(ids.sentHere("a", 160)).toBe(false);
    expect(ids.sentHere("b", 0)).toBe(false);
  });

  it("does not count a copy the stream only called a duplicate (another instance's took the id)", () => {
    const ids = new IdsInDoubt(100);
    ids.opened("a", "p1", 0);
    ids.closed("a", "p1", { taken: false, inDoubt: true }, 1);
    expect(ids.sentHere("a", 2)).toBe(false);
    expect(ids.on("a", 2)).toBeUndefined();
  });

  it("holds a copy open on its actor while its turn runs, and for the window after it ended in doubt", () => {
    const ids = new IdsInDoubt(100);
    ids.opened("a", "p1", 0);
    expect(ids.on("a", 1)).toBe("p1");
    expect(ids.on("a", 1, "p1")).toBeUndefined();
    ids.closed("a", "p1", IN_DOUBT, 20);
    expect(ids.on("a", 119, "p2")).toBe("p1");
    expect(ids.on("a", 120)).toBeUndefined();
    ids.opened("b", "p1", 0);
    ids.closed("b", "p1", TAKEN, 5);
    expect(ids.on("b", 6)).toBeUndefined();
    expect(ids.size).toBe(1);
  });

  it("keeps a copy open while any of two turns on one actor still runs", () => {
    const ids = new IdsInDoubt(100);
    ids.opened("a", "p1", 0);
    ids.opened("a", "p1", 1);
    ids.closed("a", "p1", TAKEN, 2);
    expect(ids.on("a", 3)).toBe("p1");
    ids.closed("a", "p1", TAKEN, 4);
    expect(ids.on("a", 5)).toBeUndefined();
  });

  it("drops the oldest ids past its bound and the expired ones as it takes new ones", () => {
    const ids = new IdsInDoubt(100, 2);
    for (const [n, id] of ["a", "b", "c"].entries()) {
      ids.opened(id, "p", n);
      ids.closed(id, "p", IN_DOUBT, n);
    }
    ids.opened("d", "p", 3);
    expect([ids.on("a", 3), ids.on("b", 3), ids.on("c", 3)]).toEqual([undefined, undefined, "p"]);
    expect([ids.sentHere("a", 3), ids.sentHere("c", 3)]).toEqual([false, true]);
    ids.closed("d", "p", TAKEN, 150);
    ids.opened("e", "p", 150);
    expect(ids.size).toBe(1);
  });
});
