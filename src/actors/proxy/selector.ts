/**
 * The proxy selector: carries out `proxy.acquire`, which spans proxies. It
 * reads the proxies' loads from the read model, asks the best candidate's
 * actor for a grant, and on refusal (the proxy filled up, went into cooldown,
 * became unhealthy or was removed meanwhile) asks the next. Each actor checks
 * its own cap against its own history, so no cap is ever exceeded, whatever
 * the concurrency and however many instances run; the read model only decides
 * the order of asking.
 */
import type { ProxyStats } from "../../events/index.ts";
import type { ActorHost } from "../actor-host.ts";
import type { TurnResult } from "../turn-result.ts";
import type { Clock } from "../clock.ts";
import type { Rejection } from "../decision.ts";
import type { ProxyReadModel } from "../../projections/proxy-read-model.ts";
import type { ProxyAcquireReply } from "../../projections/proxy.ts";
import { GRANT_REFUSED, refusalOf } from "./decide.ts";
import type { GrantProxyLease } from "./commands.ts";
import { considerProxies, rankProxies, type Ranking } from "./select.ts";

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

/** Chooses proxies for acquisitions on one service instance. */
export class ProxySelector {
  /** The latest acquisition per requestId in progress here: a repeat waits for it, then finds its answer. */
  private readonly byRequestId = new Map<string, Promise<TurnResult>>();

  constructor(
    private readonly host: ActorHost,
    private readonly model: ProxyReadModel,
    private readonly clock: Clock,
    private readonly newId: () => string,
    /** How long a requestId is remembered (the server's dedupWindowMs). */
    private readonly dedupWindowMs: number,
  ) {}

  /**
   * Grants a lease on the best eligible proxy, or says why none could take
   * one; never throws. `requestedAt` (durable commands) is when the command
   * was first sent: a grant recorded for its requestId since then answers it.
   */
  acquire(request: AcquireProxyLease, requestId?: string, requestedAt?: number): Promise<TurnResult> {
    if (requestId === undefined) return this.select(request, undefined, undefined);
    const previous = this.byRequestId.get(requestId);
    const go = () => this.select(request, requestId, requestedAt);
    const run = previous === undefined ? go() : previous.then(go, go);
    this.byRequestId.set(requestId, run);
    const forget = () => {
      if (this.byRequestId.get(requestId) === run) this.byRequestId.delete(requestId);
    };
    run.then(forget, forget);
    return run;
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

  private async select(request: AcquireProxyLease, requestId: string | undefined, requestedAt: number | undefined): Promise<TurnResult> {
    if (this.clock.now() + request.ttlMs > MAX_INSTANT_MS) {
      return fail({ code: "BAD_REQUEST", message: `ttlMs ${request.ttlMs} puts the lease's expiry past the year 9999` });
    }
    try {
      await this.model.fresh();
    } catch (e) {
      return fail({ code: "UNAVAILABLE", message: `the event stream could not be read: ${(e as Error).message}` });
    }
    const now = this.clock.now();
    if (requestId !== undefined) {
      const earlier = this.model.acquisitionFor(requestId, requestedAt ?? now - this.dedupWindowMs);
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
          result = await this.host.execute("proxy", name, command, requestId, requestedAt);
        } finally {
          this.model.selection.noteAsking(name, -1);
        }
        if (result.ok) {
          this.model.noteGranted(result.reply as ProxyAcquireReply, request.ttlMs, requestId);
          return result;
        }
        const refusal = result.rejection.code === GRANT_REFUSED ? refusalOf(result.rejection.details) : undefined;
        // Anything but a refusal (the stream is unavailable) ends the acquisition: nothing was granted.
        if (refusal === undefined) return result;
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
