/**
 * The pure parts of `npm run bench:peers` (bench/peers.ts): its command
 * line, the servers' command lines and configuration (the durability each
 * system is measured at is decided there), and the ratios it prints against
 * issue 12's targets. The bench itself is not run here.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { pairRatio, peerRatios, peersTable, summarizePeers, type PeerRun } from "../../bench/peer-report.ts";
import { etcdArgs, findOnPath, redisArgs } from "../../bench/peer-servers.ts";
import { PEER_SYSTEMS, parsePeerSettings, type PeerSystem } from "../../bench/peer-settings.ts";
import { benchNatsConfig, UsageError } from "../../bench/support.ts";

describe("parsePeerSettings", () => {
  it("defaults to every system, 1 and 64 in flight, 3 repeats of 4 s windows", () => {
    const s = parsePeerSettings([], "/r");
    expect(s).toEqual({
      systems: [...PEER_SYSTEMS],
      durationMs: 4000,
      warmupMs: 1000,
      concurrency: [1, 64],
      repeats: 3,
      ttlMs: 10_000,
      resultsDir: "/r",
      json: false,
    });
  });

  it("keeps the listed systems in the bench's own order and reads every option", () => {
    const s = parsePeerSettings(
      [
        "--systems",
        "redis, etcd,leasehold",
        "--concurrency",
        "8",
        "--duration-ms",
        "500",
        "--repeats",
        "1",
        "--warmup-ms",
        "0",
        "--json",
        "--results-dir",
        "out",
      ],
      "/r",
    );
    expect(s).toMatchObject({
      systems: ["leasehold", "etcd", "redis"],
      concurrency: [8],
      durationMs: 500,
      repeats: 1,
      warmupMs: 0,
      json: true,
      resultsDir: "out",
    });
  });

  it("answers help for --help", () => {
    expect(parsePeerSettings(["--help"], "/r")).toBe("help");
  });

  it.each([
    [["--systems", "mysql"], "--systems: unknown system mysql"],
    [["--systems", "etcd,etcd"], "--systems lists a system twice: etcd,etcd"],
    [["--repeats", "0"], "--repeats must be a positive whole number, got 0"],
    [["--concurrency", "1,x"], "--concurrency must be a positive whole number, got x"],
    [["--nodes", "3"], "Unknown option '--nodes'"],
  ])("rejects %j with a one-line usage error", (args, message) => {
    expect(() => parsePeerSettings(args, "/r")).toThrow(UsageError);
    expect(() => parsePeerSettings(args, "/r")).toThrow(message);
  });
});

describe("server command lines", () => {
  it("runs etcd as one loopback member, and without fsync only when asked", () => {
    const args = etcdArgs({ dataDir: "/d/data", clientPort: 2001, peerPort: 2002, noFsync: false });
    const flag = (name: string) => args[args.indexOf(name) + 1];
    expect(flag("--data-dir")).toBe("/d/data");
    expect(flag("--listen-client-urls")).toBe("http://127.0.0.1:2001");
    expect(flag("--advertise-client-urls")).toBe("http://127.0.0.1:2001");
    expect(flag("--listen-peer-urls")).toBe("http://127.0.0.1:2002");
    expect(flag("--initial-cluster")).toBe("bench=http://127.0.0.1:2002");
    expect(args).not.toContain("--unsafe-no-fsync");
    expect(etcdArgs({ dataDir: "/d", clientPort: 1, peerPort: 2, noFsync: true })).toContain("--unsafe-no-fsync");
  });

  it("leaves Redis's persistence at its defaults, or turns on the AOF with an fsync per write", () => {
    const plain = redisArgs({ dir: "/d", port: 7000, persistence: "default" });
    expect(plain).toEqual(["--port", "7000", "--bind", "127.0.0.1", "--dir", "/d", "--daemonize", "no"]);
    const aof = redisArgs({ dir: "/d", port: 7000, persistence: "aof-always" });
    expect(aof.slice(plain.length)).toEqual(["--appendonly", "yes", "--appendfsync", "always"]);
  });

  it("configures nats-server's sync interval only when given", () => {
    expect(benchNatsConfig("/d")).toBe('listen: 127.0.0.1:-1\nports_file_dir: "/d"\njetstream { store_dir: "/d/js" }');
    expect(benchNatsConfig("/d", { syncInterval: "always" })).toContain('jetstream { store_dir: "/d/js", sync_interval: always }');
  });
});

describe("findOnPath", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("finds an executable in a later PATH entry and ignores a file that is not executable", () => {
    dir = mkdtempSync(join(tmpdir(), "peers-path-"));
    const [a, b] = [join(dir, "a"), join(dir, "b")];
    for (const d of [a, b]) mkdirSync(d);
    writeFileSync(join(dir, "plain"), "");
    expect(findOnPath("etcd-fake", [a, b].join(delimiter))).toBeUndefined();
    const exe = join(dir, "etcd-fake");
    writeFileSync(exe, "#!/bin/sh\n");
    chmodSync(exe, 0o755);
    expect(findOnPath("etcd-fake", ["", a, dir].join(delimiter))).toBe(exe);
    expect(findOnPath("plain", dir)).toBeUndefined();
    expect(findOnPath("etcd-fake", undefined)).toBeUndefined();
  });
});

describe("ratios", () => {
  const run = (system: PeerSystem, repeat: number, concurrency: number, pairsPerSec: number): PeerRun => ({
    system,
    repeat,
    concurrency,
    seconds: 1,
    pairs: pairsPerSec,
    failedRequests: 0,
    pairsPerSec,
    p50Ms: 1,
    p99Ms: 2,
    nodeCpuPct: 50,
    serverCpuPct: 20,
    loadAvg1m: 1,
  });

  it("takes the median of the per-repeat ratios, not the ratio of the medians", () => {
    const runs = [
      run("leasehold", 1, 64, 1000),
      run("etcd", 1, 64, 100), // 10
      run("leasehold", 2, 64, 600),
      run("etcd", 2, 64, 200), // 3
      run("leasehold", 3, 64, 800),
      run("etcd", 3, 64, 400), // 2
    ];
    expect(pairRatio(runs, "leasehold", "etcd", 64)).toBe(3);
    // medians 800 / 200 would say 4
    expect(summarizePeers(runs, ["leasehold", "etcd"], [64]).map((s) => s.pairsPerSec)).toEqual([800, 200]);
  });

  it("skips a repeat where one side is missing or completed nothing", () => {
    const runs = [
      run("leasehold", 1, 1, 100),
      run("etcd", 1, 1, 0),
      run("leasehold", 2, 1, 100),
      run("etcd", 2, 1, 50),
      run("leasehold", 3, 1, 100),
    ];
    expect(pairRatio(runs, "leasehold", "etcd", 1)).toBe(2);
    expect(pairRatio(runs, "leasehold", "redis", 1)).toBeUndefined();
  });

  it("checks the targets only where issue 12 sets them: 5x etcd and 2x etcd with sync_interval always, at 64 in flight", () => {
    const runs = [
      run("leasehold", 1, 1, 500),
      run("leasehold-sync", 1, 1, 500),
      run("etcd", 1, 1, 100),
      run("leasehold", 1, 64, 5000),
      run("leasehold-sync", 1, 64, 1900),
      run("etcd", 1, 64, 1000),
    ];
    const ratios = peerRatios(runs, [1, 64]);
    expect(ratios.map((r) => [`${r.numerator}/${r.denominator}`, r.concurrency, r.ratio, r.atLeast, r.met])).toEqual([
      ["leasehold/etcd", 1, 5, undefined, undefined],
      ["leasehold/etcd", 64, 5, 5, true],
      ["leasehold-sync/etcd", 1, 5, undefined, undefined],
      ["leasehold-sync/etcd", 64, 1.9, 2, false],
    ]);
    const table = peersTable(summarizePeers(runs, ["leasehold", "leasehold-sync", "etcd"], [1, 64]), ratios);
    expect(table).toContain("| leasehold / etcd | 64 | 5.00 | >= 5 | yes |");
    expect(table).toContain("| leasehold-sync / etcd | 64 | 1.90 | >= 2 | no |");
    expect(table).toContain("| etcd | etcd default: WAL fsync on every commit | 64 | 1000 |");
  });
});
