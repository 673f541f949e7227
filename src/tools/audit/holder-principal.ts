/**
 * The audit's principal rule (docs/protocol.md, "Principals"): an event that
 * acts on a lease or session as its holder (a lock's renewal or release, an
 * acquisition under a session, a session's keepalive or close, a proxy
 * lease's release or the cooldown its report started) carries the `by` of
 * the principal that created that lease or session, or an operator's. It
 * answers "who released my lock?" and catches a doctored stream.
 */
import type { EventEnvelope } from "../../events/envelope.ts";
import type { LockState } from "../../lock/state.ts";
import type { ProxyState } from "../../proxy/state.ts";
import type { SessionState } from "../../session/state.ts";
import type { StreamFold } from "../stream-fold.ts";
import { cell } from "../table.ts";
import { actsFor } from "../../contract/operators.ts";

/** The rule's id and what it forbids. */
export const HOLDER_PRINCIPAL_RULE = {
  "holder-principal":
    "an event that acts on a lease or session as its holder carries the `by` of the principal that created it, or an operator's (`--operators`)",
} as const;

/** Whether a principal is an operator (the service's `--operators`). */
export type IsOperator = (principal: string) => boolean;

/**
 * Why `event` breaks the rule against its actor's state `before` (and the
 * sessions in `fold`), or null when it keeps it or binds nobody.
 */
export function holderPrincipalBreach(event: EventEnvelope, before: unknown, fold: StreamFold, isOperator: IsOperator): string | null {
  const holder = holderOf(event, before, fold);
  if (holder === undefined || holder === "") return null;
  const by = event.by ?? "";
  if (actsFor(by, holder) || isOperator(by)) return null;
  return `${event.type} by ${by === "" ? "an unknown principal" : cell(by)}, but ${cell(holder)} created what it acts on and ${by === "" ? "none" : "it"} is no operator`;
}

/** The principal that created what a holder-bound event acts on; undefined when the event is not holder-bound. */
function holderOf(event: EventEnvelope, before: unknown, fold: StreamFold): string | undefined {
  const data = event.data as { session?: string; leaseId?: string };
  switch (event.type) {
    case "LockRenewed":
    case "LockReleased": {
      const lease = (before as LockState).lease;
      return lease === null ? undefined : (lease.by ?? "");
    }
    case "LockAcquired":
    case "LockWaiterQueued": {
      if (data.session === undefined) return undefined;
      const session = fold.get("session", data.session);
      return session.opened ? (session.by ?? "") : undefined;
    }
    case "SessionKeptAlive":
    case "SessionClosed":
      return (before as SessionState).opened ? ((before as SessionState).by ?? "") : undefined;
    case "ProxyLeaseReleased":
    case "ProxyCooldownStarted": {
      if (data.leaseId === undefined) return undefined;
      const lease = (before as ProxyState).leases.get(data.leaseId);
      return lease === undefined ? undefined : (lease.by ?? "");
    }
    default:
      return undefined;
  }
}
