/**
 * The proxy decider bound to the one given/when/then helper
 * (test/support/decider-spec.ts), with one more expectation (a grant refused
 * for a reason), and builders of proxy events.
 */
import { expect } from "vitest";
import type { HistoryEntry } from "../../src/events/envelope.ts";
import type { ProxyEvent } from "../../src/proxy/events.ts";
import type { GrantRefusal, ProxyCommand, ProxySettings } from "../../src/proxy/commands.ts";
import { decideProxy, refusalOf } from "../../src/proxy/decide.ts";
import { evolveProxy, initialProxyState, type ProxyState } from "../../src/proxy/state.ts";
import { deciderSpec, type Then as SpecThen } from "./decider-spec.ts";
import { iso, specEvent, T0 } from "./event-builders.ts";

export { iso, T0 };

/** A short cooldown (= retention) so specs read easily. */
export const COOLDOWN_MS = 60_000;
/** Settings of the specs. */
export const SETTINGS: ProxySettings = { cooldownMs: COOLDOWN_MS };
/** The proxy specs use unless they name another. */
export const PROXY = "egress-1";

type DataOf<T extends ProxyEvent["type"]> = Extract<ProxyEvent, { type: T }>["data"];

/** One recorded proxy event at `seq`, decided at `at`; encoded and decoded, so specs only use events the stream accepts. */
export function proxyEvent<T extends ProxyEvent["type"]>(seq: number, type: T, data: DataOf<T>, at = T0, name = PROXY): HistoryEntry {
  return specEvent(seq, "proxy", name, type, data, at);
}

/** `ProxyRegistered` with the contract's defaults for what is not given. */
export function registered(
  seq: number,
  r: { maxLeases: number; latencyMs?: number; labels?: Record<string, string>; healthy?: boolean; at?: number },
): HistoryEntry {
  return proxyEvent(
    seq,
    "ProxyRegistered",
    { maxLeases: r.maxLeases, latencyMs: r.latencyMs ?? 0, labels: r.labels ?? {}, healthy: r.healthy ?? true },
    r.at ?? T0,
  );
}

/** `ProxyRemoved` at `at`. */
export function removed(seq: number, at = T0): HistoryEntry {
  return proxyEvent(seq, "ProxyRemoved", {}, at);
}

/** `ProxyLeaseGranted` of `leaseId` at `at` for `ttlMs` (expiry derived as the decider would). */
export function granted(seq: number, g: { leaseId: string; ttlMs: number; at?: number; target?: string }): HistoryEntry {
  const at = g.at ?? T0;
  return proxyEvent(
    seq,
    "ProxyLeaseGranted",
    { leaseId: g.leaseId, target: g.target ?? "", ttlMs: g.ttlMs, expiresAt: iso(at + g.ttlMs) },
    at,
  );
}

/** `ProxyLeaseReleased` of `leaseId` at `at`. */
export function releasedLease(seq: number, leaseId: string, at = T0): HistoryEntry {
  return proxyEvent(seq, "ProxyLeaseReleased", { leaseId }, at);
}

/** `ProxyCooldownStarted` for `target` reported at `at` (until `at + COOLDOWN_MS`). */
export function cooledDown(
  seq: number,
  c: { leaseId: string; target: string; at?: number; result?: "rate_limited" | "banned" },
): HistoryEntry {
  const at = c.at ?? T0;
  return proxyEvent(
    seq,
    "ProxyCooldownStarted",
    { leaseId: c.leaseId, result: c.result ?? "rate_limited", target: c.target, untilAt: iso(at + COOLDOWN_MS) },
    at,
  );
}

/** What a spec expects of a decision. */
export interface Then extends SpecThen<ProxyEvent> {
  /** The decider refuses a grant, for `reason` (the selector then asks the next proxy). */
  thenRefusesGrant(reason: GrantRefusal): void;
}

/** A proxy with a given history, ready for a command. */
export interface Given {
  readonly state: ProxyState;
  when(command: ProxyCommand, now: number): Then;
}

/** Folds `history` with evolveProxy and returns a spec builder for the resulting state. */
export function givenProxy(history: readonly HistoryEntry[], settings: ProxySettings = SETTINGS, name = PROXY): Given {
  return givenState(history.reduce(evolveProxy, initialProxyState(name)), settings);
}

/** The proxy kind's specs. */
export const proxySpec = deciderSpec<ProxyState, ProxyCommand, ProxyEvent, ProxySettings>(
  { initial: initialProxyState, evolve: evolveProxy, decide: decideProxy },
  SETTINGS,
  PROXY,
);

/** A spec builder for an explicit state (e.g. a pruned one). */
export function givenState(state: ProxyState, settings: ProxySettings = SETTINGS): Given {
  const given = proxySpec.givenState(state);
  return {
    state,
    when(command, now) {
      const then = given.when(command, now, settings);
      return {
        ...then,
        thenRefusesGrant(reason) {
          expect(then.decision.outcome).toBe("reject");
          if (then.decision.outcome !== "reject") return;
          expect(refusalOf(then.decision.rejection.details)).toBe(reason);
        },
      };
    },
  };
}

/** Stats as a grant command carries them (their values do not affect the decision). */
export const SOME_STATS = { considered: 1, unhealthy: 0, inCooldown: 0, atCapacity: 0 };

/** A grant command with defaults: lease `L-new`, no target, no labels. */
export function grant(g: { leaseId?: string; ttlMs?: number; target?: string; labels?: Record<string, string> } = {}): ProxyCommand {
  return {
    op: "grant",
    leaseId: g.leaseId ?? "L-new",
    target: g.target ?? "",
    ttlMs: g.ttlMs ?? 10_000,
    labels: g.labels ?? {},
    stats: SOME_STATS,
  };
}
