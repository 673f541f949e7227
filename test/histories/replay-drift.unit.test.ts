/**
 * The replay-drift guard: every recorded history (test/histories/<kind>/)
 * folds, with today's code, to exactly the states and replies recorded with
 * it. A change to a fold that alters them fails here — snapshots made by the
 * old fold would otherwise be trusted with a new meaning — until the kind's
 * fold version is bumped (so old snapshots are ignored) and the histories are
 * recorded again (`npm run histories:record`).
 */
import { relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ACTOR_KINDS } from "../../src/contract/subjects.ts";
import { HISTORIES_DIR, logicOf, readHistories, replay } from "./histories.ts";

const histories = readHistories();

describe("recorded histories", () => {
  it("cover every kind, each with messages that parse and one that does not", () => {
    expect(new Set(histories.map((h) => h.header.kind))).toEqual(new Set(ACTOR_KINDS));
    for (const h of histories) {
      expect(h.lines.filter((l) => l.reply !== undefined).length, h.path).toBeGreaterThan(0);
      expect(h.lines.some((l) => l.reply === undefined), h.path).toBe(true);
    }
  });

  for (const history of histories) {
    const name = relative(HISTORIES_DIR, history.path);
    it(`${name} folds to the states and replies recorded with it`, () => {
      const { header, lines } = history;
      const foldVersion = logicOf(header.kind, header.settings).foldVersion;
      if (foldVersion !== header.foldVersion) {
        expect.fail(
          `${name} was recorded with ${header.kind} fold version ${header.foldVersion}, the fold is now version ${foldVersion}: record the histories again (npm run histories:record) and review the diff`,
        );
      }
      const replayed = replay(header, lines);
      for (const [i, line] of lines.entries()) {
        const got = replayed[i]!;
        const what = `${name}: seq ${line.seq} (${line.subject}) folds differently than recorded; if the change is meant, bump the ${header.kind} fold version and record the histories again`;
        expect(got.state, what).toEqual(line.state);
        expect(got.reply, what).toEqual(line.reply);
      }
    });
  }
});
