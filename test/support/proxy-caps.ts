/**
 * Judges a proxy history from the stream alone: replays every proxy's events
 * in order and reports each instant (a grant's `at`) where the proxy held
 * more unexpired, unreleased leases than its maxLeases at that instant.
 */
import type { ProxyEvent } from "../../src/proxy/events.ts";
import type { RecordedEvent } from "../../src/events/envelope.ts";

/** One instant where a proxy held more leases than its cap. */
export interface CapViolation {
  readonly proxy: string;
  readonly seq: number;
  readonly at: string;
  readonly active: number;
  readonly maxLeases: number;
}

/** Every grant after which its proxy held more active leases than its cap (empty when the caps held). */
export function capViolations(events: readonly RecordedEvent[]): CapViolation[] {
  const proxies = new Map<string, { maxLeases: number; leases: Map<string, number> }>();
  const violations: CapViolation[] = [];
  for (const { seq, event } of events) {
    const e = event as ProxyEvent;
    let p = proxies.get(e.id);
    if (p === undefined) proxies.set(e.id, (p = { maxLeases: 0, leases: new Map() }));
    switch (e.type) {
      case "ProxyRegistered":
        p.maxLeases = e.data.maxLeases;
        break;
      case "ProxyLeaseGranted": {
        p.leases.set(e.data.leaseId, Date.parse(e.data.expiresAt));
        const at = Date.parse(e.at);
        let active = 0;
        for (const expiresAt of p.leases.values()) if (at < expiresAt) active++;
        if (active > p.maxLeases) violations.push({ proxy: e.id, seq, at: e.at, active, maxLeases: p.maxLeases });
        break;
      }
      case "ProxyLeaseReleased":
        p.leases.delete(e.data.leaseId);
        break;
      default:
        break;
    }
  }
  return violations;
}
