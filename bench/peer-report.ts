/**
 * The figures of a peers run: medians per system and concurrency, the
 * ratios issue 12 names (each the median of the per-repeat ratios, so both
 * sides of a ratio come from the same repeat of the same run), and the
 * printed tables. Pure.
 */
import { PEER_DURABILITY, type PeerSystem } from "./peer-settings.ts";
import { figure, markdownTable, median, NO_FIGURE } from "./support.ts";

/** One timed window of one system at one concurrency. */
export interface PeerRun {
  readonly system: PeerSystem;
  readonly repeat: number;
  readonly concurrency: number;
  readonly seconds: number;
  readonly pairs: number;
  readonly failedRequests: number;
  readonly pairsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** CPU of the bench process (load generator, clients, and leasehold's service), percent of one core. */
  readonly nodeCpuPct: number;
  /** CPU of the system's server process (nats-server, etcd or redis-server), percent of one core. */
  readonly serverCpuPct: number;
  readonly loadAvg1m: number;
}

/** Medians over the repeats of one system at one concurrency. */
export interface PeerSummary {
  readonly system: PeerSystem;
  readonly concurrency: number;
  readonly pairsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly serverCpuPct: number;
  readonly failedRequests: number;
}

/** A ratio of two systems' pair rates, and the target issue 12 sets for it, if any. */
export interface RatioSpec {
  readonly numerator: PeerSystem;
  readonly denominator: PeerSystem;
  readonly target?: { readonly concurrency: number; readonly atLeast: number };
}

/** The ratios printed: the two targets of issue 12 first, then the comparisons with Redis and with etcd without fsync. */
export const PEER_RATIOS: readonly RatioSpec[] = [
  { numerator: "leasehold", denominator: "etcd", target: { concurrency: 64, atLeast: 5 } },
  { numerator: "leasehold-sync", denominator: "etcd", target: { concurrency: 64, atLeast: 2 } },
  { numerator: "leasehold", denominator: "etcd-nofsync" },
  { numerator: "leasehold", denominator: "redis" },
  { numerator: "leasehold", denominator: "redis-aof" },
  { numerator: "leasehold-sync", denominator: "redis" },
  { numerator: "leasehold-sync", denominator: "redis-aof" },
  // What nats-server itself allows at each sync setting: leasehold against its one-publish ceiling, and the ceiling against etcd.
  { numerator: "leasehold", denominator: "ceiling" },
  { numerator: "leasehold-sync", denominator: "ceiling-sync" },
  { numerator: "ceiling-sync", denominator: "etcd" },
];

/** One computed ratio. */
export interface PeerRatio {
  readonly numerator: PeerSystem;
  readonly denominator: PeerSystem;
  readonly concurrency: number;
  /** Median over the repeats of numerator pairs/s over denominator pairs/s; undefined when no repeat has both. */
  readonly ratio: number | undefined;
  /** The target when this row has one. */
  readonly atLeast: number | undefined;
  /** Whether the target is met; undefined without a target or a ratio. */
  readonly met: boolean | undefined;
}

/** Medians of each system that ran at each concurrency, in the order of `systems`. */
export function summarizePeers(runs: readonly PeerRun[], systems: readonly PeerSystem[], concurrencies: readonly number[]): PeerSummary[] {
  return concurrencies.flatMap((concurrency) =>
    systems.flatMap((system) => {
      const its = runs.filter((r) => r.system === system && r.concurrency === concurrency);
      if (its.length === 0) return [];
      return [
        {
          system,
          concurrency,
          pairsPerSec: median(its.map((r) => r.pairsPerSec)),
          p50Ms: median(its.map((r) => r.p50Ms)),
          p99Ms: median(its.map((r) => r.p99Ms)),
          serverCpuPct: median(its.map((r) => r.serverCpuPct)),
          failedRequests: its.reduce((n, r) => n + r.failedRequests, 0),
        },
      ];
    }),
  );
}

/** Median over the repeats of `numerator`'s pairs/s over `denominator`'s of the same repeat and concurrency. */
export function pairRatio(
  runs: readonly PeerRun[],
  numerator: PeerSystem,
  denominator: PeerSystem,
  concurrency: number,
): number | undefined {
  const ratios: number[] = [];
  const repeats = new Set(runs.map((r) => r.repeat));
  for (const repeat of repeats) {
    const find = (system: PeerSystem) => runs.find((r) => r.system === system && r.repeat === repeat && r.concurrency === concurrency);
    const n = find(numerator);
    const d = find(denominator);
    if (n !== undefined && d !== undefined && d.pairsPerSec > 0) ratios.push(n.pairsPerSec / d.pairsPerSec);
  }
  return ratios.length === 0 ? undefined : median(ratios);
}

/** Every ratio of {@link PEER_RATIOS} whose two systems ran, at each concurrency. */
export function peerRatios(runs: readonly PeerRun[], concurrencies: readonly number[]): PeerRatio[] {
  return PEER_RATIOS.flatMap((spec) =>
    concurrencies.flatMap((concurrency) => {
      const ratio = pairRatio(runs, spec.numerator, spec.denominator, concurrency);
      if (ratio === undefined) return [];
      const atLeast = spec.target?.concurrency === concurrency ? spec.target.atLeast : undefined;
      return [
        {
          numerator: spec.numerator,
          denominator: spec.denominator,
          concurrency,
          ratio,
          atLeast,
          met: atLeast === undefined ? undefined : ratio >= atLeast,
        },
      ];
    }),
  );
}

/** The one printed table: each system's figures, then the ratios with their targets. */
export function peersTable(summaries: readonly PeerSummary[], ratios: readonly PeerRatio[]): string {
  const figures = markdownTable(
    ["system", "durability", "in flight", "pairs/s", "p50 ms", "p99 ms", "server CPU %", "failed requests"],
    summaries.map((s) => [
      s.system,
      PEER_DURABILITY[s.system],
      s.concurrency,
      figure(s.pairsPerSec),
      figure(s.p50Ms, 2),
      figure(s.p99Ms, 2),
      figure(s.serverCpuPct),
      s.failedRequests,
    ]),
  );
  const ratioTable = markdownTable(
    ["ratio (pairs/s)", "in flight", "ratio", "target", "met"],
    ratios.map((r) => [
      `${r.numerator} / ${r.denominator}`,
      r.concurrency,
      figure(r.ratio, 2),
      r.atLeast === undefined ? NO_FIGURE : `>= ${r.atLeast}`,
      r.met === undefined ? NO_FIGURE : r.met ? "yes" : "no",
    ]),
  );
  return `${figures}\n\n${ratioTable}`;
}

/** Every window, for the record: the noise of the run is in these rows. */
export function peerRunsTable(runs: readonly PeerRun[]): string {
  return markdownTable(
    ["repeat", "in flight", "system", "pairs/s", "p50 ms", "p99 ms", "node CPU %", "server CPU %", "load 1m", "failed"],
    runs.map((r) => [
      r.repeat,
      r.concurrency,
      r.system,
      figure(r.pairsPerSec),
      figure(r.p50Ms, 2),
      figure(r.p99Ms, 2),
      figure(r.nodeCpuPct),
      figure(r.serverCpuPct),
      r.loadAvg1m,
      r.failedRequests,
    ]),
  );
}
