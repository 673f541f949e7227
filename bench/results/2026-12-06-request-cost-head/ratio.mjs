import { readFileSync, readdirSync } from "node:fs";
const med = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const out = {};
for (const f of readdirSync("bench/results/2026-12-06-request-cost-head").filter((f) => f.endsWith(".json"))) {
  const tree = f.split("-")[0];
  const j = JSON.parse(readFileSync(`bench/results/2026-12-06-request-cost-head/${f}`, "utf8"));
  for (const rep of [1, 2]) {
    const c = j.runs.find((r) => r.system === "ceiling" && r.repeat === rep);
    const l = j.runs.find((r) => r.system === "leasehold" && r.repeat === rep);
    if (c && l) (out[tree] ??= []).push({ f, ratio: l.cpuUsPerRequest / c.cpuUsPerRequest, kb: l.kbPerRequest });
  }
}
for (const [t, rs] of Object.entries(out)) console.log(t, rs.map((r) => r.ratio.toFixed(2)).join(" "), "median", med(rs.map((r) => r.ratio)).toFixed(3), "kb", med(rs.map((r) => r.kb)).toFixed(1));
if (out.main && out.base) console.log("main/base", (med(out.main.map((r) => r.ratio)) / med(out.base.map((r) => r.ratio))).toFixed(3));
