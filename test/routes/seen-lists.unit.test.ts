/** The memo of candidate lists known to lie within seen sets. */
import { describe, expect, it } from "vitest";
import { SeenLists } from "../../src/route/seen-lists.ts";

describe("SeenLists", () => {
  const seen = new Set(["a", "b", "c"]);

  it("knows a list by its content, only for the seen sets it was told about", () => {
    const lists = new SeenLists();
    lists.within(["a", "b"]).add(seen);
    expect(lists.within(["a", "b"]).has(seen)).toBe(true);
    expect(lists.within(["b", "a"]).has(seen)).toBe(false);
    expect(lists.within(["a", "b"]).has(new Set(seen))).toBe(false);
  });

  it("copies a list that is not frozen, so a later change of the caller's array does not count", () => {
    const lists = new SeenLists();
    const mine = ["a", "b"];
    lists.within(mine).add(seen);
    mine.push("z");
    expect(lists.within(mine).has(seen)).toBe(false);
    expect(lists.within(["a", "b"]).has(seen)).toBe(true);
  });

  it("forgets the least recently used list beyond its capacity", () => {
    const lists = new SeenLists(2);
    lists.within(["a"]).add(seen);
    lists.within(["b"]).add(seen);
    lists.within(["a"]); // used again: "b" is now the oldest
    lists.within(["c"]).add(seen);
    expect(lists.within(["a"]).has(seen)).toBe(true);
    expect(lists.within(["c"]).has(seen)).toBe(true);
    expect(lists.within(["b"]).has(seen)).toBe(false);
  });
});
