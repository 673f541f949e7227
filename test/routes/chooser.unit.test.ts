/** The two choosers behind the RouteChooser interface. */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { leastLoadedChooser, rendezvousChooser, rendezvousOver, rendezvousScore, chooserNamed } from "../../src/route/chooser.ts";

const key = { route: "chat/eu", fp: "conv-1", model: "llama" };

describe("least-loaded chooser", () => {
  it("picks the fewest active leases, then the smallest name by code unit; hosts without leases count 0", () => {
    expect(
      leastLoadedChooser.choose(
        key,
        ["b", "a", "c"],
        new Map([
          ["a", 2],
          ["b", 1],
        ]),
      ),
    ).toBe("c");
    expect(
      leastLoadedChooser.choose(
        key,
        ["b", "a"],
        new Map([
          ["a", 1],
          ["b", 1],
        ]),
      ),
    ).toBe("a");
    expect(leastLoadedChooser.choose(key, ["é", "z", "Z"], new Map())).toBe("Z");
    expect(leastLoadedChooser.choose(key, [], new Map())).toBeUndefined();
  });
});

describe("rendezvous chooser", () => {
  it("scores a host by the first 8 bytes of SHA-256 over route NUL fp NUL model NUL host", () => {
    const expected = createHash("sha256").update("chat/eu\u0000conv-1\u0000llama\u0000gpu-7").digest().readBigUInt64BE(0);
    expect(rendezvousScore(key, "gpu-7")).toBe(expected);
  });

  it("picks the highest score, whatever the order of candidates and the loads", () => {
    const hosts = ["h1", "h2", "h3", "h4", "h5"];
    const best = [...hosts].sort((a, b) => (rendezvousScore(key, b) > rendezvousScore(key, a) ? 1 : -1))[0];
    expect(rendezvousChooser.choose(key, hosts, new Map())).toBe(best);
    expect(rendezvousChooser.choose(key, [...hosts].reverse(), new Map([[best!, 99]]))).toBe(best);
  });

  it("moves only the keys of a removed host, and spreads keys over the hosts", () => {
    const hosts = ["h1", "h2", "h3", "h4"];
    const keys = Array.from({ length: 400 }, (_, i) => ({ route: "r", fp: `c${i}`, model: "m" }));
    const before = keys.map((k) => rendezvousChooser.choose(k, hosts, new Map())!);
    const after = keys.map((k) =>
      rendezvousChooser.choose(
        k,
        hosts.filter((h) => h !== "h2"),
        new Map(),
      )!,
    );
    for (let i = 0; i < keys.length; i++) if (before[i] !== "h2") expect(after[i]).toBe(before[i]);
    for (const h of hosts) expect(before.filter((x) => x === h).length).toBeGreaterThan(50);
  });

  // Pairs of hosts whose scores for ROUTE_KEY share their first 32 bits (found by a birthday search over gpu-<n>),
  // so the choice rests on the second half of the score: the one with the higher 64-bit score must win.
  const ROUTE_KEY = { route: "r", fp: "", model: "m" };
  it.each([
    ["gpu-55008", "gpu-92127", "the winner has the smaller name"],
    ["gpu-24918", "gpu-131184", "the winner has the larger name"],
  ])("compares the whole 64-bit score when the first 32 bits tie: %s beats %s (%s)", (winner, loser) => {
    const high = (h: string) => rendezvousScore(ROUTE_KEY, h) >> 32n;
    expect(high(winner)).toBe(high(loser));
    expect(rendezvousScore(ROUTE_KEY, winner)).toBeGreaterThan(rendezvousScore(ROUTE_KEY, loser));
    expect(rendezvousChooser.choose(ROUTE_KEY, [winner, loser], new Map())).toBe(winner);
    expect(rendezvousChooser.choose(ROUTE_KEY, [loser, winner], new Map())).toBe(winner);
  });

  it("declares that it needs no loads (callers skip counting them), and the least-loaded one that it does", () => {
    expect(rendezvousChooser.needsLoads).toBe(false);
    expect(leastLoadedChooser.needsLoads).toBe(true);
  });

  it("is selected by name", () => {
    expect(chooserNamed("rendezvous")).toBe(rendezvousChooser);
    expect(chooserNamed("least-loaded")).toBe(leastLoadedChooser);
  });
});

/** A digest giving each host the score [high, low] named for it (the text ends with NUL host). */
function scoresOf(scores: Record<string, readonly [number, number]>): (text: string) => Buffer {
  return (text) => {
    const [high, low] = scores[text.slice(text.lastIndexOf("\u0000") + 1)] ?? [0, 0];
    const digest = Buffer.alloc(32);
    digest.writeUInt32BE(high, 0);
    digest.writeUInt32BE(low, 4);
    return digest;
  };
}

// Ties of real SHA-256 scores take about 2^32 hashes to find; the tie-breaking
// is the same function over a digest that ties on purpose.
describe("rendezvous tie-breaking, over a digest that ties on purpose", () => {
  it("a whole 64-bit tie goes to the smallest name, whatever the order of candidates", () => {
    const chooser = rendezvousOver(scoresOf({ a: [5, 7], b: [5, 7], c: [5, 6] }));
    expect(chooser.choose(key, ["a", "b", "c"], new Map())).toBe("a");
    expect(chooser.choose(key, ["b", "a", "c"], new Map())).toBe("a");
    expect(chooser.choose(key, ["c", "b", "a"], new Map())).toBe("a");
  });

  it("a score of 0 (both halves) is still a score: the only candidate, or the highest, wins", () => {
    expect(rendezvousOver(scoresOf({ z: [0, 0] })).choose(key, ["z"], new Map())).toBe("z");
    expect(rendezvousOver(scoresOf({ y: [0, 0], z: [0, 0] })).choose(key, ["z", "y"], new Map())).toBe("y");
  });

  it("the first half decides before the second", () => {
    const chooser = rendezvousOver(scoresOf({ a: [1, 0], b: [0, 0xffffffff] }));
    expect(chooser.choose(key, ["b", "a"], new Map())).toBe("a");
    expect(chooser.choose(key, ["a", "b"], new Map())).toBe("a");
  });
});
