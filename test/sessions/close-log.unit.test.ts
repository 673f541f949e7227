/**
 * The session table's log of closes (src/session/close-log.ts): a reader
 * gets every id closed since its mark, in order; once the log has dropped
 * what a mark needs (past its bound, or after a restore reset it), the
 * reader is told so (undefined), never given a partial list.
 */
import { describe, expect, it } from "vitest";
import { SessionCloseLog } from "../../src/session/close-log.ts";

describe("the log of session closes", () => {
  it("gives every id closed since a mark, in order", () => {
    const log = new SessionCloseLog();
    const start = log.mark();
    log.closed("a");
    const middle = log.mark();
    log.closed("b");
    log.closed("c");
    expect(log.since(start)).toEqual(["a", "b", "c"]);
    expect(log.since(middle)).toEqual(["b", "c"]);
    expect(log.since(log.mark())).toEqual([]);
  });

  it("answers undefined for a mark it no longer reaches: past its bound, or after a reset", () => {
    const log = new SessionCloseLog(4);
    const start = log.mark();
    for (const id of ["a", "b", "c", "d"]) log.closed(id);
    expect(log.since(start)).toEqual(["a", "b", "c", "d"]);
    log.closed("e");
    // Over its bound: the oldest dropped, and a mark from before them is not answered in part.
    expect(log.since(start)).toBeUndefined();
    const kept = log.mark();
    log.closed("f");
    expect(log.since(kept)).toEqual(["f"]);
    log.reset();
    expect(log.since(kept)).toBeUndefined();
    const after = log.mark();
    log.closed("g");
    expect(log.since(after)).toEqual(["g"]);
    // A mark from the future is no mark of this log.
    expect(log.since(log.mark() + 1)).toBeUndefined();
  });
});
