/**
 * The proxies' read model: every proxy's state folded from the stream (the
 * same fold as the actors), plus the indexes the endpoints need without
 * scanning: lease id -> proxy (for release and report), and requestId ->
 * reply of the acquisition that granted a lease (an acquisition spans
 * proxies, so its idempotency cannot rest on one actor's memory), and the
 * selection index (proxies classified and ordered as selection sees them).
 */
import type { HistoryEntry } from "../events/envelope.ts";
import { isProxyEvent } from "./events.ts";
import { isUnparsable } from "../events/envelope.ts";
import { instantMs } from "../events/envelope.ts";
import type { KindProjection } from "../projections/kind-projection.ts";
import { ProjectedReadModel } from "../projections/read-model.ts";
import { ProxySelectionIndex } from "./selection-index.ts";
import { ACQUISITIONS, RecentAcquisitions } from "./recent-acquisitions.ts";
import { activeLeases, compareNames, proxyView, pruneProxy, type ProxyAcquireReply, type ProxyState, type ProxyView } from "./state.ts";

/** Settings of the read model. */
export interface ProxyReadModelOptions {
  /** How long an expired lease still resolves (the server's cooldownMs). */
  readonly retentionMs: number;
  /** How long a requestId is remembered (the server's dedupWindowMs). */
  readonly dedupWindowMs: number;
}

interface IndexedLease {
  readonly proxy: string;
  readonly expiresAtMs: number;
}

/** The followed proxy states and their indexes. */
export class ProxyReadModel extends ProjectedReadModel<ProxyState> {
  private readonly leases = new Map<string, IndexedLease>();
  /** Grants this instance made that the fold has not reached yet (so concurrent selections count them). */
  private readonly unfolded = new Map<string, IndexedLease>();
  private readonly acquisitions = new RecentAcquisitions();
  /** Proxies as selection classifies and orders them, kept current from the fold, grants and asks of this instance. */
  readonly selection: ProxySelectionIndex;

  constructor(
    projection: KindProjection<ProxyState>,
    private readonly options: ProxyReadModelOptions,
  ) {
    super(projection);
    this.selection = new ProxySelectionIndex({ stateOf: (name) => this.stateOf(name), states: () => this.states() });
    projection.onFold((id, _state, entry) => {
      this.index(id, entry);
      this.selection.refresh(id);
    });
    projection.onRestore(() => {
      this.selection.invalidate();
      for (const [proxy, state] of projection.entries()) {
        for (const lease of state.leases.values()) this.leases.set(lease.id, { proxy, expiresAtMs: lease.expiresAtMs });
      }
    });
    // Acquisitions span proxies, so their replies are not any one state's: they ride in the snapshot.
    // (A start's backlog worker builds them from the same grants: proxyBacklogExtras.)
    projection.attachExtra(ACQUISITIONS, this.acquisitions);
  }

  /** The folded state of one proxy. */
  stateOf(name: string): ProxyState {
    return this.projection.get(name);
  }

  /** Every proxy with history (registered or not). */
  *states(): IterableIterator<ProxyState> {
    for (const [, state] of this.projection.entries()) yield state;
  }

  /** How many proxies are registered (the rows of `proxy.list`). */
  registered(): number {
    let n = 0;
    for (const state of this.states()) if (state.registration !== null) n++;
    return n;
  }

  /** `proxy.list` at `now`: registered proxies sorted by name. */
  list(now: number): ProxyView[] {
    const out: ProxyView[] = [];
    for (const state of this.states()) if (state.registration !== null) out.push(proxyView(state, state.registration, now));
    return out.sort((a, b) => compareNames(a.proxy, b.proxy));
  }

  /** `proxy.counts` at `now`: active leases of registered proxies that have any, by name. */
  counts(now: number): Record<string, number> {
    const entries: [string, number][] = [];
    for (const state of this.states()) {
      if (state.registration === null) continue;
      const active = activeLeases(state, now);
      if (active > 0) entries.push([state.name, active]);
    }
    // fromEntries defines own properties, so any proxy name (even "__proto__") is an ordinary key.
    return Object.fromEntries(entries.sort((a, b) => compareNames(a[0], b[0])));
  }

  /** The proxy the latest request with `requestId` was carried out on, while its reply is remembered. */
  proxyOfRequest(requestId: string): string | undefined {
    return this.projection.idOfRequest(requestId);
  }

  /** The proxy a lease was granted on, if this instance has seen the grant. */
  proxyOfLease(leaseId: string): string | undefined {
    return this.leases.get(leaseId)?.proxy;
  }

  /** The reply of the latest lease granted for `requestId` at or after `since` (epoch ms), if any. */
  acquisitionFor(requestId: string, since: number): ProxyAcquireReply | undefined {
    const remembered = this.acquisitions.get(requestId);
    return remembered !== undefined && remembered.atMs >= since ? remembered.reply : undefined;
  }

  /** Records a grant this instance just made, ahead of the fold. */
  noteGranted(reply: ProxyAcquireReply, ttlMs: number, requestId: string | undefined): void {
    const { id, proxy, expiresAt } = reply.lease;
    if (this.leases.has(id)) return;
    const expiresAtMs = instantMs(expiresAt);
    const lease = { proxy, expiresAtMs };
    this.leases.set(id, lease);
    this.unfolded.set(id, lease);
    this.selection.addUnfolded(proxy, id, expiresAtMs);
    if (requestId !== undefined) this.acquisitions.remember(requestId, reply, expiresAtMs - ttlMs);
  }

  /** Unexpired leases this instance granted on `proxy` that the fold has not reached yet. */
  unfoldedOn(proxy: string, now: number): number {
    return this.selection.unfoldedOn(proxy, now);
  }

  /** Drops from memory what no answer at or after `now` can depend on. */
  prune(now: number): void {
    const { retentionMs, dedupWindowMs } = this.options;
    this.projection.compact((_id, state) => pruneProxy(state, now, retentionMs));
    for (const [id, lease] of this.leases) if (now > lease.expiresAtMs + retentionMs) this.leases.delete(id);
    for (const [id, lease] of this.unfolded) if (now >= lease.expiresAtMs) this.unfolded.delete(id);
    this.selection.prune(now);
    this.acquisitions.prune(now, dedupWindowMs);
  }

  /** How many lease ids and requestIds the indexes hold (tests and diagnostics). */
  get indexSizes(): { leases: number; unfolded: number; acquisitions: number } {
    return { leases: this.leases.size, unfolded: this.unfolded.size, acquisitions: this.acquisitions.size };
  }

  private index(proxy: string, entry: HistoryEntry): void {
    if (isUnparsable(entry)) return;
    const event = entry.event;
    if (!isProxyEvent(event)) return;
    if (event.type === "ProxyLeaseGranted") {
      const d = event.data;
      if (this.unfolded.delete(d.leaseId)) this.selection.forgetUnfolded(proxy, d.leaseId);
      this.leases.set(d.leaseId, { proxy, expiresAtMs: instantMs(d.expiresAt) });
      this.acquisitions.fold(proxy, entry);
    } else if (event.type === "ProxyLeaseReleased") {
      this.leases.delete(event.data.leaseId);
    }
  }
}
