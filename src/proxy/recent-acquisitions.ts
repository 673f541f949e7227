/**
 * The replies of recent proxy acquisitions by `requestId`: an acquisition
 * spans proxies, so its idempotency cannot rest on one proxy's state. Kept by
 * the proxies' read model, saved in its snapshots, and built by a start's
 * backlog worker from the same grants, so a first start folds proxies off
 * the main thread as it does every other kind.
 */
import { instantMs } from "../events/envelope.ts";
import { isProxyEvent } from "./events.ts";
import { isUnparsable, type HistoryEntry } from "../events/envelope.ts";
import type { BacklogExtra } from "../projections/kind-fold.ts";
import { acquireReplyOf, type ProxyAcquireReply } from "./state.ts";

/** The name the acquisitions go by in the proxies' snapshots and backlog parts. */
export const ACQUISITIONS = "acquisitions";

/** The data a start's backlog worker builds beside the proxies' states, as their read model's extras would hold it. */
export const proxyBacklogExtras = { [ACQUISITIONS]: () => new RecentAcquisitions() };

/** Acquisition replies kept past the dedup window (see {@link RecentAcquisitions.prune}). */
const KEEP_RECENT_ACQUISITIONS = 1024;

/** One acquisition's reply and when it was granted (epoch ms). */
export interface RememberedAcquisition {
  readonly reply: ProxyAcquireReply;
  readonly atMs: number;
}

/** Acquisition replies by requestId, in the order they were granted. */
export class RecentAcquisitions implements BacklogExtra {
  private readonly byRequest = new Map<string, RememberedAcquisition>();

  /** How many requestIds are remembered. */
  get size(): number {
    return this.byRequest.size;
  }

  /** The acquisition remembered for `requestId`, if any. */
  get(requestId: string): RememberedAcquisition | undefined {
    return this.byRequest.get(requestId);
  }

  /** Remembers a grant's reply as the newest. */
  remember(requestId: string, reply: ProxyAcquireReply, atMs: number): void {
    // Re-inserted, so the map stays in the order the grants were made (prune relies on it).
    this.byRequest.delete(requestId);
    this.byRequest.set(requestId, { reply, atMs });
  }

  /** Remembers the grant `entry` records on `proxy`, when it has a requestId. */
  fold(proxy: string, entry: HistoryEntry): void {
    if (isUnparsable(entry)) return;
    const event = entry.event;
    if (isProxyEvent(event) && event.type === "ProxyLeaseGranted" && event.requestId !== undefined)
      this.remember(event.requestId, acquireReplyOf(proxy, event.data), instantMs(event.at));
  }

  /** What a snapshot keeps: the latest grants, oldest first. */
  save(): [string, RememberedAcquisition][] {
    return [...this.byRequest].slice(-KEEP_RECENT_ACQUISITIONS * 8);
  }

  /** Takes in what {@link save} gave, as the newest. */
  restore(data: unknown): void {
    if (!Array.isArray(data)) return;
    for (const [requestId, remembered] of data as [string, RememberedAcquisition][]) this.byRequest.set(requestId, remembered);
  }

  /**
   * As the actor runtime keeps replies: twice the window (slack for clock
   * skew between instances), but the latest few regardless, for durable
   * commands redelivered after an outage longer than the window.
   */
  prune(now: number, dedupWindowMs: number): void {
    for (const [requestId, remembered] of this.byRequest) {
      if (this.byRequest.size <= KEEP_RECENT_ACQUISITIONS || remembered.atMs >= now - 2 * dedupWindowMs) break;
      this.byRequest.delete(requestId);
    }
  }
}
