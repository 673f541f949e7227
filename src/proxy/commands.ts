/** The commands a proxy actor takes (docs/protocol.md, Proxies), already validated. */
import type { ProxyStats } from "./events.ts";

/** Register the proxy, or replace its registration (a removed proxy comes back). */
export interface RegisterProxy {
  readonly op: "register";
  readonly maxLeases: number;
  readonly latencyMs: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly healthy: boolean;
}
/** Take the proxy out of selection (its leases and cooldowns stay). */
export interface RemoveProxy {
  readonly op: "remove";
}
/**
 * Grant a lease on this proxy if it is still eligible: the selector chose it
 * from the read model, and the actor re-checks against its own history.
 */
export interface GrantProxyLease {
  readonly op: "grant";
  readonly leaseId: string;
  readonly target: string;
  readonly ttlMs: number;
  /** The labels the acquisition asked for (the registration must still hold them). */
  readonly labels: Readonly<Record<string, string>>;
  /** The acquisition's stats as the selector counted them, recorded so a repeat gets the same answer. */
  readonly stats: ProxyStats;
}
/** Give a lease back (idempotent: unknown or already released ids change nothing). */
export interface ReleaseProxyLease {
  readonly op: "release";
  readonly leaseId: string;
}
/** Report how a leased proxy behaved; `target: ""` means none given (the lease's own target applies). */
export interface ReportProxyLease {
  readonly op: "report";
  readonly leaseId: string;
  readonly result: ProxyResult;
  readonly target: string;
}

/** A client's report of how a leased proxy behaved. */
export type ProxyResult = "ok" | "rate_limited" | "banned";

/** Any proxy command. */
export type ProxyCommand = RegisterProxy | RemoveProxy | GrantProxyLease | ReleaseProxyLease | ReportProxyLease;

/** Server-side proxy settings. */
export interface ProxySettings {
  /** How long a reported (proxy, target) pair cools down (the first of a streak), and how long an expired lease still resolves for report. */
  readonly cooldownMs: number;
  /** Each further cooldown of a streak lasts this factor times the one before (>= 1; default 1: every cooldown lasts `cooldownMs`). */
  readonly cooldownBackoff?: number;
  /** The longest a cooldown may last (default 86,400,000 ms); never shorter than `cooldownMs`. */
  readonly maxCooldownMs?: number;
}

/** The length of the `streak`-th cooldown of a streak: `cooldownMs × f^(streak−1)`, whole ms, within [cooldownMs, maxCooldownMs]. */
export function cooldownLength(settings: ProxySettings, streak: number): number {
  const factor = settings.cooldownBackoff ?? 1;
  const cap = Math.max(settings.cooldownMs, settings.maxCooldownMs ?? 86_400_000);
  const length = Math.round(settings.cooldownMs * factor ** (streak - 1));
  return Math.max(settings.cooldownMs, Math.min(cap, Number.isFinite(length) ? length : cap));
}

/** Why a proxy refused a grant: the selector counts it as such and asks the next candidate. */
export type GrantRefusal = "notConsidered" | "unhealthy" | "inCooldown" | "atCapacity";
