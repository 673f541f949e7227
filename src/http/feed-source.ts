/**
 * A {@link MetricsSource} built from what is visible outside the runtime: the
 * dashboard's fold of the stream (live leases, last sequence, its own lag),
 * the connection's status, and which actors the actor runtime holds in memory
 * (`peek`). The runtime may override any part with its own numbers (its read
 * models' lag and readiness above all) through `overrides`.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { ACTOR_KINDS } from "../contract/subjects.ts";
import type { DashboardFeed } from "./dashboard-feed.ts";
import type { MetricsSource, PerKind } from "./metrics.ts";

/** Settings of {@link feedMetricsSource}. */
export interface FeedSourceOptions {
  readonly feed: DashboardFeed;
  readonly connection: ConnectionWatch;
  /** What the runtime reports itself; each replaces the feed's estimate. */
  readonly overrides?: Partial<MetricsSource>;
}

/** Tracks whether a NATS connection is up, from its status events. */
export class ConnectionWatch {
  private up = true;
  private closed = false;

  constructor(nc: NatsConnection) {
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect") this.up = false;
        else if (s.type === "reconnect") this.up = true;
      }
    })();
    void nc.closed().then(() => (this.closed = true));
  }

  /** Is the connection up right now? */
  get connected(): boolean {
    return this.up && !this.closed;
  }
}

/** The source: feed and connection, with the runtime's own numbers where it gives them. */
export function feedMetricsSource(options: FeedSourceOptions): MetricsSource {
  const { feed, connection } = options;
  const base: MetricsSource = {
    // Only the runtime knows its actors in memory (its `status` overrides this); the stream says nothing of them.
    activeActors: (): PerKind => ({}),
    liveLeases: (now) => feed.liveLeases(now),
    streamLastSeq: () => feed.lastSeq,
    readModelLag(): PerKind {
      const lag = feed.lag;
      return Object.fromEntries(ACTOR_KINDS.map((k) => [k, lag]));
    },
    ready: () => connection.connected && feed.reachable && feed.caughtUp,
  };
  const o = options.overrides ?? {};
  return {
    activeActors: o.activeActors ?? base.activeActors,
    liveLeases: o.liveLeases ?? base.liveLeases,
    streamLastSeq: o.streamLastSeq ?? base.streamLastSeq,
    readModelLag: o.readModelLag ?? base.readModelLag,
    // The runtime's readiness adds to the feed's: both must hold.
    ready: o.ready === undefined ? base.ready : () => base.ready() && o.ready!(),
  };
}
