/**
 * The doc-sample runner's own rules (test/docs/samples.ts): which blocks run
 * and with which step first, and what a comparison lets differ (durations,
 * unlearned instants, padding) and what it does not (a learned id or
 * instant, any other character).
 */
import { describe, expect, it } from "vitest";
import { compare, Learned, pageSamples, type Sample } from "./samples.ts";

const PAGE = [
  "```sh",
  "$ npx leasehold call lock.get '{}'",
  "{}",
  "```",
  "<!-- samples: not run (why) -->",
  "```sh",
  "$ npx leasehold call skipped",
  "```",
  "<!-- samples: restart (what it does) -->",
  "```sh",
  "$ npx leasehold call first",
  "a",
  "$ npx leasehold call second",
  "b",
  "",
  "(exit 1)",
  "```",
].join("\n");

function sample(command: string, shown: string[]): Sample {
  return { command, shown, from: 0, to: 0 };
}

describe("the doc-sample runner", () => {
  it("leaves out a block marked not run, names a step on the first sample of its block only, and reads an exit note", () => {
    const samples = pageSamples(PAGE);
    expect(samples.map((s) => [s.command, s.before, s.exit])).toEqual([
      ["npx leasehold call lock.get '{}'", undefined, undefined],
      ["npx leasehold call first", "restart", undefined],
      ["npx leasehold call second", undefined, 1],
    ]);
    expect(samples[2]!.shown).toEqual(["b"]);
  });

  it("matches durations and column padding by shape, and nothing else", () => {
    const learned = new Learned();
    const shown = sample("npx leasehold status", ["  eu-1   1/4   yes  shop.example 14m39s left  9.2s"]);
    expect(compare(shown, ["  eu-1   1/4   yes  shop.example 3m05s left  10.5s"], learned)).toEqual([]);
    expect(compare(shown, ["  eu-1   2/4   yes  shop.example 14m39s left  9.2s"], learned)).toHaveLength(1);
  });

  it("holds a learned id and instant to the run's value everywhere after, commands included", () => {
    const learned = new Learned();
    const acquire = sample("npx leasehold call lock.acquire '{}'", ['{"lease":{"id":"AAA","expiresAt":"2026-11-30T20:00:00.000Z"}}']);
    expect(compare(acquire, ['{"lease":{"id":"BBB","expiresAt":"2026-12-06T05:00:00.000Z"}}'], learned)).toEqual([]);
    const table = sample("npx leasehold replay", ["  AAA  2026-11-30T20:00:00.000Z  2026-11-30T19:59:59.000Z"]);
    // The learned instant must be the run's; an instant first shown here matches any.
    expect(compare(table, ["  BBB  2026-12-06T05:00:00.000Z  2026-12-06T04:59:58.123Z"], learned)).toEqual([]);
    expect(compare(table, ["  BBB  2026-12-06T05:00:01.000Z  2026-12-06T04:59:58.123Z"], learned)).toHaveLength(1);
    expect(compare(table, ["  AAA  2026-12-06T05:00:00.000Z  2026-12-06T04:59:58.123Z"], learned)).toHaveLength(1);
    // An instant a command names first moves with the run's clock.
    expect(learned.command("npx leasehold replay --at 2026-11-30T20:00:00.100Z --id AAA")).toBe(
      "npx leasehold replay --at 2026-12-06T05:00:00.100Z --id BBB",
    );
  });

  it("lets a JSON line's storage time be any instant, even where the page shows it equal to the event's", () => {
    const learned = new Learned();
    const tail = sample("npx leasehold tail --json", [
      '{"seq":1,"storedAt":"2026-11-30T20:00:00.000Z","event":{"at":"2026-11-30T20:00:00.000Z","data":{"expiresAt":"2026-11-30T20:01:00.000Z"}}}',
    ]);
    const run = (stored: string, at: string) =>
      `{"seq":1,"storedAt":"${stored}","event":{"at":"${at}","data":{"expiresAt":"2026-12-06T05:01:00.000Z"}}}`;
    expect(compare(tail, [run("2026-12-06T05:00:00.001Z", "2026-12-06T05:00:00.000Z")], learned)).toEqual([]);
    // The event's own instants are learned: a later line must show the same.
    expect(compare(tail, [run("2026-12-06T05:00:00.001Z", "2026-12-06T05:00:00.002Z")], learned)).toHaveLength(1);
    expect(
      compare(tail, [run("2026-12-06T05:00:00.001Z", "2026-12-06T05:00:00.000Z").replace('"seq":1', '"seq":2')], learned),
    ).toHaveLength(1);
  });
});
