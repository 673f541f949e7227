/**
 * The lock decider: docs/protocol.md's Locks rules as a pure function of the
 * lock's state, the command and the server's instant. Order of checks, as the
 * contract fixes it: TTL ceiling, then CORRUPT, then the state checks.
 */
import { type Decision, recorder, reject, replyOnly } from "../decision.ts";
import type { LockEvent } from "../../events/index.ts";
import type { LockState } from "../../projections/lock.ts";
import { leaseView } from "../../projections/lock.ts";
import type { LockCommand, LockSettings } from "./commands.ts";

const record = recorder<LockEvent>();

/** Decides one lock command. */
export function decideLock(state: LockState, command: LockCommand, now: number, settings: LockSettings): Decision<LockEvent> {
  const ttlMs = command.op === "acquire" ? (command.ttlMs ?? settings.lockTtlMs) : command.op === "renew" ? command.ttlMs : undefined;
  if (ttlMs !== undefined && ttlMs > settings.maxTtlMs) return ttlTooLong(ttlMs, settings.maxTtlMs);

  if (command.op === "reset") return record("LockReset", { generation: state.generation });

  const corruption = corruptionOf(state, now, settings.maxTtlMs);
  if (corruption !== null) {
    return reject("CORRUPT", `lock ${state.name} refuses its history: ${corruption}; an operator must reset it`);
  }

  const lease = state.lease;
  const live = lease !== null && lease.expiresAtMs > now;
  switch (command.op) {
    case "get":
      return replyOnly({ lease: live ? leaseView(state.name, lease) : null });
    case "acquire":
      if (live) {
        return reject("LEASE_EXISTS", `lock ${state.name} is held by ${lease.owner} until ${lease.expiresAt}`, {
          owner: lease.owner,
          expiresAt: lease.expiresAt,
        });
      }
      return record("LockAcquired", {
        owner: command.owner,
        generation: state.generation + 1,
        ttlMs: ttlMs!,
        expiresAt: new Date(now + ttlMs!).toISOString(),
        previousOwner: lease?.owner ?? "",
      });
    case "renew": {
      if (lease === null || lease.owner !== command.owner || lease.etag !== command.etag) {
        return reject("NOT_HELD", `lock ${state.name} is not held by ${command.owner} with that etag`);
      }
      const renewTtl = command.ttlMs ?? lease.ttlMs;
      if (renewTtl > settings.maxTtlMs) return ttlTooLong(renewTtl, settings.maxTtlMs);
      return record("LockRenewed", {
        owner: lease.owner,
        generation: lease.generation,
        ttlMs: renewTtl,
        expiresAt: new Date(now + renewTtl).toISOString(),
      });
    }
    case "release":
      if (lease === null) return reject("ALREADY_RELEASED", `lock ${state.name} is not held`);
      if (lease.etag !== command.etag) return reject("NOT_HELD", `lock ${state.name} is held under another etag`);
      return record("LockReleased", { owner: lease.owner, generation: lease.generation });
  }
}

/** Why the lock's history cannot be trusted at `now`, or null. */
function corruptionOf(state: LockState, now: number, maxTtlMs: number): string | null {
  if (state.corrupt !== null) return state.corrupt;
  const lease = state.lease;
  if (lease !== null && lease.expiresAtMs - now > maxTtlMs) {
    return `its lease expires at ${lease.expiresAt}, more than maxTtlMs (${maxTtlMs}) after now`;
  }
  return null;
}

function ttlTooLong(ttlMs: number, maxTtlMs: number): Decision<LockEvent> {
  return reject("TTL_EXCEEDS_MAX", `ttlMs ${ttlMs} exceeds the server's maximum ${maxTtlMs}`, { ttlMs, maxTtlMs });
}
