/**
 * The service's Prometheus metrics, with the names and labels the wire
 * contract gives them. The runtime reports what happens (a command finished,
 * an append finished or lost its expected-sequence race) through
 * {@link ServiceMetrics}; everything that is a level rather than an event
 * (actors in memory, live leases, the stream's last sequence, read model
 * lag) is read from a {@link MetricsSource} at scrape time, so nothing has to
 * keep those numbers current between scrapes.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { ACTOR_KINDS, type ActorKind } from "../contract/subjects.ts";

/** A number per actor kind; kinds left out are reported as 0. */
export type PerKind = Partial<Record<ActorKind, number>>;

/**
 * What the metrics read at scrape time and `/readyz` asks. Implemented by
 * the runtime (or, until it does, by {@link feedMetricsSource} from the
 * dashboard's own view of the stream). Every method answers from memory:
 * a scrape never waits on NATS.
 */
export interface MetricsSource {
  /** Actors in memory on this instance, by kind. */
  readonly activeActors: () => PerKind;
  /** Leases that are live at `now` (epoch ms): unexpired locks, proxy leases, route leases. */
  readonly liveLeases: (now: number) => PerKind;
  /** The event stream's last sequence, as last learnt. */
  readonly streamLastSeq: () => number;
  /** Events each kind's read model is behind the stream. */
  readonly readModelLag: () => PerKind;
  /** Connected, streams reachable, every read model caught up to where the stream was when it started. */
  readonly ready: () => boolean;
}

/** Latency buckets (seconds) for a turn or an append: 0.5 ms to 10 s. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One instance's metrics in their own registry (several instances in one process stay apart). */
export class ServiceMetrics {
  /** The registry `/metrics` exposes. */
  readonly registry = new Registry();
  private readonly commands: Counter<"kind" | "op" | "outcome">;
  private readonly commandSeconds: Histogram<"kind" | "op">;
  private readonly appendSeconds: Histogram;
  private readonly appendConflicts: Counter;
  private readonly refusedReplies: Counter<"path">;
  private readonly shedRequests: Counter<"reason">;
  private source: MetricsSource | undefined;
  private readonly now: () => number;

  constructor(options: { readonly now?: () => number; readonly defaultMetrics?: boolean } = {}) {
    this.now = options.now ?? Date.now;
    const registers = [this.registry];
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
    this.commands = new Counter({
      name: "leasehold_commands_total",
      help: "Commands decided by this instance, by kind, op and outcome (ok, an error code, or unavailable).",
      labelNames: ["kind", "op", "outcome"],
      registers,
    });
    this.commandSeconds = new Histogram({
      name: "leasehold_command_duration_seconds",
      help: "Time from receiving a command to its answer, by kind and op.",
      labelNames: ["kind", "op"],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.appendSeconds = new Histogram({
      name: "leasehold_append_duration_seconds",
      help: "Time an append to the event stream took to be acknowledged.",
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.appendConflicts = new Counter({
      name: "leasehold_append_conflicts_total",
      help: "Appends refused because another writer had moved the actor's subject on (expected-sequence check).",
      registers,
    });
    this.refusedReplies = new Counter({
      name: "leasehold_refused_replies_total",
      help: "Requests (path=request) and durable commands (path=durable) refused because their reply subject is in the service's or NATS's own namespaces.",
      labelNames: ["path"],
      registers,
    });
    this.shedRequests = new Counter({
      name: "leasehold_shed_requests_total",
      help: "Requests answered UNAVAILABLE without being carried out, for load: reason=client-full (its client had a tenth of --max-queued-requests waiting), queue-full, waited-too-long (over 1 s for its turn).",
      labelNames: ["reason"],
      registers,
    });
    const perKind = (name: string, help: string, read: (source: MetricsSource) => PerKind) => this.perKindGauge(name, help, read);
    perKind(
      "leasehold_active_actors",
      "Actors with commands in progress on this instance, by kind (an actor is in memory only while it has commands).",
      (s) => s.activeActors(),
    );
    perKind("leasehold_live_leases", "Live leases by kind: unexpired locks, unexpired proxy leases, route leases.", (s) =>
      s.liveLeases(this.now()),
    );
    perKind("leasehold_read_model_lag", "Events each kind's read model is behind the event stream.", (s) => s.readModelLag());
    const lastSeq: Gauge = new Gauge({
      name: "leasehold_stream_last_seq",
      help: "The event stream's last sequence.",
      registers,
      collect: () => {
        if (this.source !== undefined) lastSeq.set(this.source.streamLastSeq());
      },
    });
  }

  /** Where the level metrics come from (set once the runtime is up). */
  attach(source: MetricsSource): void {
    this.source = source;
  }

  /**
   * A command was answered: call once per request or durable command, with its outcome and duration.
   * The label children are looked up once per (kind, op, outcome), not per call: prom-client hashes
   * the label set on every `inc(labels)`, a cost on every request.
   */
  commandFinished(kind: string, op: string, outcome: string, seconds: number): void {
    const key = `${kind}\u0000${op}\u0000${outcome}`;
    let children = this.commandChildren.get(key);
    if (children === undefined) {
      children = { count: this.commands.labels({ kind, op, outcome }), seconds: this.commandSeconds.labels({ kind, op }) };
      this.commandChildren.set(key, children);
    }
    children.count.inc();
    children.seconds.observe(seconds);
  }

  private readonly commandChildren = new Map<string, { count: { inc(): void }; seconds: { observe(v: number): void } }>();

  /** An append was acknowledged (or failed) after `seconds`. */
  appendFinished(seconds: number): void {
    this.appendSeconds.observe(seconds);
  }

  /** An append lost the expected-last-subject-sequence check. */
  appendConflict(): void {
    this.appendConflicts.inc();
  }

  replyRefused(path: "request" | "durable"): void {
    this.refusedReplies.inc({ path });
  }

  requestShed(reason: string): void {
    this.shedRequests.inc({ reason });
  }

  /** The exposition text and its content type. */
  async expose(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private perKindGauge(name: string, help: string, read: (source: MetricsSource) => PerKind): void {
    const gauge: Gauge<"kind"> = new Gauge({
      name,
      help,
      labelNames: ["kind"],
      registers: [this.registry],
      collect: () => {
        if (this.source === undefined) return;
        const values = read(this.source);
        for (const kind of ACTOR_KINDS) gauge.set({ kind }, values[kind] ?? 0);
      },
    });
  }
}
