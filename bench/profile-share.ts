/**
 * Where the CPU of a `node --cpu-prof` profile of a bench went: self time
 * grouped by package or source file, over a window at the end of the
 * profile (the measured part of a one-repeat bench run), as a share of busy
 * time and in µs per request.
 *
 *   npx tsx bench/profile-share.ts <file.cpuprofile> --window-ms 8000 [--skip-end-ms 500] [--requests N] [--top 15] [--layers]
 *
 * `--layers`: the service's own files counted by layer (src/actors/, src/events/, …).
 *
 * `--requests`: requests completed in the window (the bench's req/s times
 * the window), for the µs-per-request column.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { markdownTable, positiveInt, round, runBench, UsageError } from "./support.ts";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
}

interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** The group a frame's self time counts towards. */
export function groupOf(frame: ProfileNode["callFrame"]): string {
  const { url, functionName } = frame;
  if (url === "") {
    if (functionName === "(garbage collector)") return "garbage collector";
    if (functionName === "(idle)") return "(idle)";
    if (functionName === "(program)") return "(program: native, not attributed)";
    return `native ${functionName || "(anonymous)"}`;
  }
  // bench/request-cost.ts runs code built into node_modules/.cache/leasehold-bench: count it as the source it came from.
  const built = /\/\.cache\/leasehold-bench\/((?:src|bench)\/.+)\.js$/.exec(url);
  if (built !== null) return `${built[1]!}.ts`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg !== null) return pkg[1] === "xstate" ? "xstate (interpreter)" : pkg[1]!;
  const src = /\/(src\/.+|bench\/.+)$/.exec(url);
  if (src !== null) return src[1]!;
  if (url.startsWith("node:")) return "node internals";
  return url;
}

/** A source file's layer (`src/actors/x.ts` → `src/actors/`); other groups as they are. */
export function layerOf(group: string): string {
  const layer = /^(src\/[^/]+\/)/.exec(group);
  return layer === null ? group : layer[1]!;
}

function main(): void {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        "window-ms": { type: "string" },
        "skip-end-ms": { type: "string", default: "500" },
        requests: { type: "string" },
        top: { type: "string", default: "15" },
        layers: { type: "boolean", default: false },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const file = parsed.positionals[0];
  if (file === undefined) throw new UsageError("name a .cpuprofile file");
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  // Sample times: startTime plus the running sum of the deltas (µs).
  const times: number[] = [];
  let t = profile.startTime;
  for (const d of profile.timeDeltas) times.push((t += d));
  const skipEnd = Number(parsed.values["skip-end-ms"]) * 1000;
  const to = profile.endTime - skipEnd;
  const from =
    parsed.values["window-ms"] === undefined ? profile.startTime : to - positiveInt("window-ms", parsed.values["window-ms"]) * 1000;
  const self = new Map<string, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    if (times[i]! < from || times[i]! > to) continue;
    // A sample stands for the time until the next one.
    const dt = (times[i + 1] ?? profile.endTime) - times[i]!;
    const file = groupOf(byId.get(profile.samples[i]!)!.callFrame);
    const group = parsed.values.layers ? layerOf(file) : file;
    self.set(group, (self.get(group) ?? 0) + dt);
  }
  const busy = [...self].filter(([g]) => g !== "(idle)").reduce((s, [, v]) => s + v, 0);
  const requests = parsed.values.requests === undefined ? undefined : positiveInt("requests", parsed.values.requests);
  const rows = [...self]
    .filter(([g]) => g !== "(idle)")
    .sort((a, b) => b[1] - a[1])
    .slice(0, positiveInt("top", parsed.values.top));
  process.stdout.write(
    `${file}: window ${round((to - from) / 1e6, 2)} s, busy ${round(busy / 1e6, 2)} s (${round((busy / (to - from)) * 100)} % of one core)${requests === undefined ? "" : `, ${requests} requests: ${round(busy / requests, 1)} µs busy per request`}\n\n`,
  );
  process.stdout.write(
    `${markdownTable(
      ["group (self time)", "ms", "share of busy", ...(requests === undefined ? [] : ["µs per request"])],
      rows.map(([g, v]) => [
        g,
        round(v / 1000),
        `${round((v / busy) * 100, 1)} %`,
        ...(requests === undefined ? [] : [round(v / requests, 1)]),
      ]),
    )}\n`,
  );
}

runBench(() => Promise.resolve().then(main));
