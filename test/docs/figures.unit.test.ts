/**
 * The table of current figures in bench/README.md is the one scripts/figures.ts
 * renders from bench/results/current.json (`npm run figures`), every output it
 * cites is in bench/results/, and a figure is shown as meeting its bar only
 * when it does.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../cli/cli-process.ts";
import {
  FIGURES_PATH,
  README_PATH,
  parseFigures,
  resultPaths,
  shownBar,
  shownFigure,
  verdict,
  withFigures,
  type Figure,
} from "../../scripts/figures.ts";

const figures = parseFigures(readFileSync(FIGURES_PATH, "utf8"));

describe("the current figures", () => {
  it("are the table bench/README.md shows (run npm run figures after changing bench/results/current.json)", async () => {
    const readme = readFileSync(README_PATH, "utf8");
    expect(readme).toBe(await withFigures(readme, figures));
  });

  it("cite output that is in bench/results/", () => {
    const missing = resultPaths(figures).filter((p) => !existsSync(join(ROOT, "bench/results", p)));
    expect(missing).toEqual([]);
    for (const f of figures) expect(f.results !== undefined || f.commit !== undefined, f.target).toBe(true);
  });

  it("each have a value to hold against their bar, and a why where they miss it", () => {
    for (const f of figures.filter((g) => g.bar !== undefined && g.judged !== false)) {
      expect(f.value, f.target).toBeTypeOf("number");
      if (verdict(f) !== "met") expect(f.why, `${f.target} misses its bar without a why`).toBeDefined();
    }
  });
});

describe("the figures' rendering", () => {
  const base: Figure = { target: "t", metric: "m", command: "c", date: "2026-01-01" };

  it("says met only when the figure is on the bar's side", () => {
    expect(verdict({ ...base, value: 0.85, bar: { op: ">=", value: 0.85 } })).toBe("met");
    expect(verdict({ ...base, value: 0.84, bar: { op: ">=", value: 0.85 } })).toBe("**not met**");
    expect(verdict({ ...base, value: 1.3, bar: { op: "<=", value: 1.3 } })).toBe("met");
    expect(verdict({ ...base, value: 1.31, bar: { op: "<=", value: 1.3 } })).toBe("**not met**");
    expect(verdict({ ...base, value: 200, bar: { op: "<", value: 200 } })).toBe("**not met**");
    expect(verdict({ ...base, value: 0.1, bar: { op: ">=", value: 0.8 }, judged: false, reason: "load 15" })).toBe("not judged: load 15");
    expect(verdict({ ...base, value: 0.1 })).toBe("–");
    expect(() => verdict({ ...base, bar: { op: ">=", value: 0.8 } })).toThrow(/needs a value/);
  });

  it("shows the median, its range and runs, and the bar with its issue", () => {
    expect(shownFigure({ ...base, value: 2044, unit: " ms", low: 1306, high: 2449, runs: 10 })).toBe("2,044 ms (1,306–2,449), 10 runs");
    expect(shownFigure({ ...base, value: 0.6, low: 0.6, high: 0.64, runs: 3 })).toBe("0.60 (0.60–0.64), 3 runs");
    expect(shownFigure({ ...base, value: 37.3, digits: 1, low: -8, high: 37.3, runs: 2, stat: "highest" })).toBe(
      "37.3 (−8.0–37.3), the highest of 2 runs",
    );
    expect(shownBar({ ...base, bar: { op: "<=", value: 1.3, unit: "×", issue: 42 } })).toBe("≤ 1.3× (issue 42)");
    expect(shownBar(base)).toBe("–");
  });
});
