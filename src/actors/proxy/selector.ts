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
import { considerProxies, rankProxies } from "./select.ts";

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

/** Chooses proxies for acquisitions on one service instance. */
export class ProxySelector {
  /** Grants asked of each proxy and not answered yet. */
  private readonly asking = new Map<string, number>();
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
    const consideration = considerProxies(
      request.candidates,
      request.labels,
      (name) => this.model.stateOf(name),
      () => this.model.states(),
    );
    if ("unknown" in consideration) {
      const proxies = consideration.unknown;
      return fail({ code: "UNKNOWN_PROXY", message: `not registered: ${proxies.join(", ")}`, details: { proxies } });
    }
    const unfolded = this.model.unfoldedLoads(now);
    const ranking = rankProxies(consideration.considered, request.target, now, {
      granted: (name) => unfolded.get(name) ?? 0,
      asking: (name) => this.asking.get(name) ?? 0,
    });
    const stats: ProxyStats = { ...ranking.stats };
    const leaseId = this.newId();
    for (const name of ranking.eligible) {
      const command: GrantProxyLease = {
        op: "grant",
        leaseId,
        target: request.target,
        ttlMs: request.ttlMs,
        labels: request.labels,
        stats: { ...stats },
      };
      this.asking.set(name, (this.asking.get(name) ?? 0) + 1);
      let result: TurnResult;
      try {
        result = await this.host.execute("proxy", name, command, requestId, requestedAt);
      } finally {
        const left = (this.asking.get(name) ?? 1) - 1;
        if (left === 0) this.asking.delete(name);
        else this.asking.set(name, left);
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
    return fail({
      code: "NO_MATCH",
      message: `no proxy could take a lease (considered ${stats.considered}, unhealthy ${stats.unhealthy}, in cooldown ${stats.inCooldown}, at capacity ${stats.atCapacity})`,
      details: { stats },
    });
  }
}
