/**
 * The command line of `npm run bench:peers` (bench/peers.ts) and the
 * systems it can measure, each with the durability it runs at. Pure: no
 * process, no I/O, so the parsing is unit-tested.
 */
import { parseArgs } from "node:util";
import { BENCH_OPTIONS, listOf, positiveInt, UsageError, type CommonSettings } from "./support.ts";

/** The systems the peers bench knows, in the order they are listed and measured. */
export const PEER_SYSTEMS = [
  "leasehold",
  "leasehold-sync",
  "ceiling",
  "ceiling-sync",
  "etcd",
  "etcd-nofsync",
  "redis",
  "redis-aof",
] as const;

/** One of {@link PEER_SYSTEMS}. */
export type PeerSystem = (typeof PEER_SYSTEMS)[number];

/** What each system is and at which durability it runs, as printed beside its figures. */
export const PEER_DURABILITY: Readonly<Record<PeerSystem, string>> = {
  leasehold: "nats-server default: JetStream fsyncs every 2 min (sync_interval 2m)",
  "leasehold-sync": "nats-server `jetstream { sync_interval: always }`: fsync before every ack",
  ceiling: "bench/locks.ts's one-publish ceiling on nats-server at the default sync (no lock logic: the most any service on it could do)",
  "ceiling-sync": "the same ceiling on nats-server with `sync_interval: always`",
  etcd: "etcd default: WAL fsync on every commit",
  "etcd-nofsync": "etcd `--unsafe-no-fsync` (no fsync at all; for comparison only)",
  redis: "Redis default: RDB snapshots (save 3600 1 300 100 60 10000), no AOF",
  "redis-aof": "Redis `appendonly yes` + `appendfsync always`: fsync before every reply",
};

/** Settings of one peers run. */
export interface PeerSettings extends CommonSettings {
  readonly systems: readonly PeerSystem[];
  /** Lock TTL: leasehold's `ttlMs`, Redis's `PX`, the TTL of etcd's shared lease (rounded up to seconds). */
  readonly ttlMs: number;
  /** Where the JSON result is written. */
  readonly resultsDir: string;
  /** Print the result as JSON on stdout instead of the tables. */
  readonly json: boolean;
}

/** The text of `--help`. */
export const PEERS_USAGE = `usage: npm run bench:peers -- [options]
       npx tsx bench/peers.ts [options]

Runs bench/locks.ts's lock workload (acquire + release pairs on cold names:
every pair a name no other worker holds) on leasehold and on etcd and Redis,
in one run, and prints rates, latencies and the ratios issue 12 names. etcd
and Redis come from Debian's packages (etcd-server, redis-server), installed
with apt-get when their binaries are missing. Every server runs on free
loopback ports with a temporary data directory and is stopped at the end,
also on error or Ctrl-C.

options:
  --systems LIST       comma-separated, any of:
                         ${PEER_SYSTEMS.join(",")}
                       (default: all). leasehold runs on its own nats-server;
                       -sync with sync_interval: always. ceiling is
                       bench/locks.ts's responder doing one JetStream publish
                       per request and nothing else (ceiling-sync: with
                       sync_interval: always). etcd-nofsync is etcd
                       with --unsafe-no-fsync; redis-aof is appendonly yes +
                       appendfsync always.
  --concurrency LIST   pairs in flight, comma-separated (default 1,64)
  --duration-ms N      measured window per system and concurrency (default 4000)
  --warmup-ms N        unmeasured warm-up before each window (default 1000)
  --repeats N          interleaved repeats; figures are medians (default 3)
  --ttl-ms N           lock TTL (default 10000)
  --results-dir DIR    where the JSON result is saved (default bench/results)
  --json               print the JSON result instead of the tables
  --help               this text

The machine's load is waited on first, as every bench does (at most
BENCH_MAX_WAIT_MS, default 10 min; BENCH_NO_LOAD_WAIT=1 skips the wait).`;

/** Parses the peers bench's arguments; `"help"` when `--help` was given. */
export function parsePeerSettings(args: readonly string[], defaultResultsDir: string): PeerSettings | "help" {
  let values;
  try {
    ({ values } = parseArgs({
      args: [...args],
      options: {
        ...BENCH_OPTIONS,
        systems: { type: "string", default: PEER_SYSTEMS.join(",") },
        "ttl-ms": { type: "string", default: "10000" },
        "results-dir": { type: "string", default: defaultResultsDir },
      },
      strict: true,
    }));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.help) return "help";
  const systems = listOf<PeerSystem>("systems", "system", values.systems, PEER_SYSTEMS);
  if (new Set(systems).size !== systems.length) throw new UsageError(`--systems lists a system twice: ${values.systems}`);
  return {
    systems: PEER_SYSTEMS.filter((s) => systems.includes(s)),
    durationMs: positiveInt("duration-ms", values["duration-ms"]),
    warmupMs: values["warmup-ms"] === "0" ? 0 : positiveInt("warmup-ms", values["warmup-ms"]),
    concurrency: values.concurrency.split(",").map((c) => positiveInt("concurrency", c.trim())),
    repeats: positiveInt("repeats", values.repeats),
    ttlMs: positiveInt("ttl-ms", values["ttl-ms"]),
    resultsDir: values["results-dir"],
    json: values.json,
  };
}
