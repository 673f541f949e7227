/**
 * Proxy leasing, the commands that span proxies or reach a proxy through the
 * read model rather than by name.
 *
 * `acquire` reads the proxies' loads from the read model, asks the best
 * candidate's actor for a grant, and on refusal (the proxy filled up, went
 * into cooldown, became unhealthy or was removed meanwhile) asks the next.
 * Each actor checks its own cap against its own history, so no cap is ever
 * exceeded, whatever the concurrency and however many instances run; the
 * read model only decides the order of asking. `release` and `report` find
 * the lease's proxy through the lease-id index.
 *
 * Durable commands of this kind run one after another, in the command
 * stream's order: they reach their actor through the read model, not
 * straight into a mailbox, so nothing else would keep that order.
 */
import type { ProxyStats } from "./events.ts";
import type { ActorRuntime, Arrival } from "../actors/actor-runtime.ts";
import type { TurnResult } from "../actors/actor-runtime.ts";
import type { Clock } from "../actors/clock.ts";
import type { Rejection } from "../contract/errors.ts";
import type { ProxyReadModel } from "./read-model.ts";
import type { ProxyAcquireReply } from "./state.ts";
import { GRANT_REFUSED, refusalOf } from "./decide.ts";
import type { GrantProxyLease, ProxyCommand, ReportProxyLease } from "./commands.ts";
import { considerProxies, rankProxies, type Ranking } from "./select.ts";
import { isInDoubt, reused, unavailableAfter } from "../actors/actor-runtime.ts";
import { freshBy } from "../actors/deadlines.ts";
import { KeyedSequencer } from "../actors/keyed-sequencer.ts";

/** A validated `proxy.acquire` request. */
export interface AcquireProxyLease {
  readonly ttlMs: number;
  readonly target: string;
  readonly candidates?: readonly string[] | undefined;
  readonly labels: Readonly<Record<string, string>>;
}

/** The last instant an RFC 3339 timestamp with a four-digit year can write. */
export const MAX_INSTANT_MS = Date.parse("9999-12-31T23:59:59.999Z");

const fail = (rejection: Rejection): TurnResult => ({ ok: false, rejection });

/**
 * How many eligible proxies an acquisition without candidates takes from the
 * index at once, in order. The first almost always grants; the rest are asked
 * only when the read model was behind the proxies' own histories.
 */
const SNAPSHOT_SIZE = 16;

/** The key under which durable proxy commands are sequenced. */
const DURABLE = "durable";

/** Proxy commands of one service instance. */
export class ProxyLeasing {
  /** Durable commands in stream order (one key); repeats of an acquisition by requestId (their own keys). */
  private readonly durable = new KeyedSequencer();
  private readonly repeats = new KeyedSequencer();

  constructor(
    private readonly runtime: ActorRuntime,
    private readonly model: ProxyReadModel,
    private readonly clock: Clock,
    private readonly newId: () => string,
    /** How long a requestId is remembered (the server's dedupWindowMs). */
    private readonly dedupWindowMs: number,
  ) {}

  /**
   * Grants a lease on the best eligible proxy, or says why none could take
   * one. A durable command's `requestedAt` is when it was first sent: a
   * grant recorded for its requestId since then answers it. A repeat of an
   * acquisition in progress here waits for it, then finds its answer.
   */
  acquire(request: AcquireProxyLease, arrival: Arrival = {}): Promise<TurnResult> {
    const { requestId } = arrival;
    return this.inOrder(arrival, (a) => {
      const go = () => this.select(request, a);
      return requestId === undefined ? go() : this.repeats.run(requestId, go);
    });
  }

  /** Releases a lease (idempotent: an id that never resolved is released already). */
  release(leaseId: string, arrival: Arrival = {}): Promise<TurnResult> {
    return this.inOrder(arrival, async (a) => {
      const proxy = await this.proxyOfLease(leaseId, a.deadline);
      if (proxy === undefined) return { ok: true, reply: {} };
      return this.runtime.execute("proxy", proxy, { op: "release", leaseId }, a);
    });
  }

  /** Reports how a lease went (`success`, `rate_limited`, `banned`, ...). */
  report(command: Omit<ReportProxyLease, "op">, arrival: Arrival = {}): Promise<TurnResult> {
    return this.inOrder(arrival, async (a) => {
      // A retry of a report whose lease was released since is answered where its reply is remembered.
      const proxy =
        (await this.proxyOfLease(command.leaseId, a.deadline)) ??
        (a.requestId === undefined ? undefined : this.model.proxyOfRequest(a.requestId));
      if (proxy === undefined) {
        return { ok: false, rejection: { code: "UNKNOWN_LEASE", message: `lease ${command.leaseId} does not resolve` } };
      }
      return this.runtime.execute("proxy", proxy, { op: "report", ...command }, a);
    });
  }

  /** A command for one named proxy (register, remove). */
  command(proxy: string, command: ProxyCommand, arrival: Arrival = {}): Promise<TurnResult> {
    return this.inOrder(arrival, (a) => this.runtime.execute("proxy", proxy, command, a));
  }

  /**
   * Runs a durable command after the durable commands taken before it; any
   * other at once. Its deadline runs from then: from arrival for a request,
   * from its turn in the sequence for a durable command (a backlog is carried
   * out, not timed out while it waits). A throw is UNAVAILABLE.
   */
  private inOrder(arrival: Arrival, run: (a: Arrival & { deadline: number }) => Promise<TurnResult>): Promise<TurnResult> {
    const guarded = () => run(this.runtime.deadlineFor(arrival)).catch(unavailableAfter);
    return arrival.requestedAt === undefined ? guarded() : this.durable.run(DURABLE, guarded);
  }

  /** The proxy a lease was granted on; catches up with the stream before saying it knows none. */
  private async proxyOfLease(leaseId: string, deadline: number): Promise<string | undefined> {
    const known = this.model.proxyOfLease(leaseId);
    if (known !== undefined) return known;
    await freshBy(this.model, this.runtime, deadline);
    return this.model.proxyOfLease(leaseId);
  }

  /**
   * The grant another instance's copy of this request made, once the read
   * model has caught up (the turn met that copy in flight, as a duplicate at
   * sequence 0, and left the request in doubt); else `inDoubt` itself.
   */
  private async grantedElsewhere(
    requestId: string,
    since: number,
    arrival: Arrival & { deadline: number },
    inDoubt: TurnResult,
  ): Promise<TurnResult> {
    try {
      await freshBy(this.model, this.runtime, arrival.deadline);
    } catch {
      return inDoubt;
    }
    const granted = this.model.acquisitionFor(requestId, since);
    return granted === undefined ? inDoubt : { ok: true, reply: granted };
  }

  /**
   * The stats and the eligible proxies in the order to ask them: from the
   * index when every proxy is considered (the first `limit`), by looking at
   * each candidate when the request names them.
   */
  private rank(request: AcquireProxyLease, now: number, limit: number): Ranking | { unknown: readonly string[] } {
    if (request.candidates === undefined) return this.model.selection.rank(request.labels, request.target, now, limit);
    const consideration = considerProxies(
      request.candidates,
      request.labels,
      (name) => this.model.stateOf(name),
      () => this.model.states(),
    );
    if ("unknown" in consideration) return consideration;
    return rankProxies(consideration.considered, request.target, now, {
      granted: (name) => this.model.unfoldedOn(name, now),
      asking: (name) => this.model.selection.askingOf(name),
    });
  }

  private async select(request: AcquireProxyLease, arrival: Arrival & { deadline: number }): Promise<TurnResult> {
    const { requestId, requestedAt, fingerprint } = arrival;
    if (this.clock.now() + request.ttlMs > MAX_INSTANT_MS) {
      return fail({ code: "BAD_REQUEST", message: `ttlMs ${request.ttlMs} puts the lease's expiry past the year 9999` });
    }
    try {
      await freshBy(this.model, this.runtime, arrival.deadline);
    } catch (e) {
      return unavailableAfter(e);
    }
    const now = this.clock.now();
    // A durable command published again is the same request: the window runs back from when this copy was sent.
    const since = (requestedAt ?? now) - this.dedupWindowMs;
    if (requestId !== undefined) {
      if (this.runtime.requestIdReused(requestId, fingerprint, since)) return reused(requestId);
      const earlier = this.model.acquisitionFor(requestId, since);
      if (earlier !== undefined) return { ok: true, reply: earlier };
    }
    const first = this.rank(request, now, SNAPSHOT_SIZE);
    if ("unknown" in first) {
      const proxies = first.unknown;
      return fail({ code: "UNKNOWN_PROXY", message: `not registered: ${proxies.join(", ")}`, details: { proxies } });
    }
    const stats: ProxyStats = { ...first.stats };
    const leaseId = this.newId();
    const asked = new Set<string>();
    let page = first.eligible;
    // A retry of a grant this instance left in doubt goes to that proxy first, where the expected sequence lets
    // only one of the two land (anywhere else the stream's duplicate window holds it: src/actors/actor-runtime.ts).
    const doubtful = requestId === undefined ? undefined : this.runtime.inDoubtOn("proxy", { op: "grant" }, requestId, fingerprint);
    if (doubtful !== undefined && (request.candidates === undefined || request.candidates.includes(doubtful)))
      page = [doubtful, ...page.filter((name) => name !== doubtful)];
    // Without candidates the index hands out the first few in order; more only when all of those refused.
    let more = request.candidates === undefined && page.length === SNAPSHOT_SIZE;
    for (;;) {
      for (const name of page) {
        if (asked.has(name)) continue;
        asked.add(name);
        const command: GrantProxyLease = {
          op: "grant",
          leaseId,
          target: request.target,
          ttlMs: request.ttlMs,
          labels: request.labels,
          stats: { ...stats },
        };
        this.model.selection.noteAsking(name, 1);
        let result: TurnResult;
        try {
          result = await this.runtime.execute("proxy", name, command, arrival);
        } finally {
          this.model.selection.noteAsking(name, -1);
        }
        if (result.ok) {
          this.model.noteGranted(result.reply as ProxyAcquireReply, request.ttlMs, requestId);
          return result;
        }
        const refusal = result.rejection.code === GRANT_REFUSED ? refusalOf(result.rejection.details) : undefined;
        // Anything but a refusal (the stream is unavailable) ends the acquisition: nothing was granted here.
        if (refusal === undefined)
          return requestId === undefined || !isInDoubt(result) ? result : this.grantedElsewhere(requestId, since, arrival, result);
        // The proxy's own history disagreed with the read model: count it as what it turned out to be.
        if (refusal === "notConsidered") stats.considered--;
        else stats[refusal]++;
      }
      if (!more) break;
      // Every proxy of the snapshot refused (the read model was behind): the next ones, as the index orders them now.
      const next = this.model.selection.rank(request.labels, request.target, this.clock.now(), asked.size + SNAPSHOT_SIZE);
      page = next.eligible;
      more = page.length === asked.size + SNAPSHOT_SIZE;
      if (page.every((name) => asked.has(name))) break;
    }
    return fail({
      code: "NO_MATCH",
      message: `no proxy could take a lease (considered ${stats.considered}, unhealthy ${stats.unhealthy}, in cooldown ${stats.inCooldown}, at capacity ${stats.atCapacity})`,
      details: { stats },
    });
  }
}
