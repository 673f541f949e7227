/**
 * The proxy selection index: each registered proxy classified as selection
 * classifies it (unhealthy, in a global cooldown, at capacity, or eligible
 * with its load, latency and name), kept current as the fold, this
 * instance's grants and its asks change, so that `proxy.acquire` without a
 * candidate list reads counts and the first few eligible proxies in
 * O(log n) instead of looking at every proxy.
 *
 * Classification depends on time (leases expire, cooldowns end). The index
 * is evaluated at one instant `at`; moving it forward re-classifies only the
 * proxies whose next boundary (lease expiry, cooldown end) it passes, found
 * in a min-heap. A clock that goes back rebuilds everything.
 *
 * A cooldown for one target concerns only acquisitions for that target, so it
 * is not part of the class: a query for a target corrects the counts and
 * skips the proxies cooling down for it (typically few).
 *
 * Label requirements select a subset: each distinct requirement gets a view
 * (members, counts, ordered eligible set) built on first use and maintained
 * from then on; the least recently used views beyond {@link MAX_VIEWS} go.
 */
import type { ProxyStats } from "./events.ts";
import { compareNames, GLOBAL_COOLDOWN, labelsMatch, type ProxyRegistration, type ProxyState } from "./state.ts";
import { SortedChunks } from "../projections/sorted-chunks.ts";

/** Label views kept besides the one without labels. */
const MAX_VIEWS = 64;

type Class = "unhealthy" | "cooling" | "full" | "open";

/** An eligible proxy's place in the order: fewest leases (in flight included), lowest latency, smallest name. */
interface RankKey {
  readonly load: number;
  readonly latencyMs: number;
  readonly name: string;
}

const byRank = (a: RankKey, b: RankKey): number => a.load - b.load || a.latencyMs - b.latencyMs || compareNames(a.name, b.name);

interface Entry {
  readonly name: string;
  readonly registration: ProxyRegistration;
  readonly cls: Class;
  /** Active folded leases plus unfolded grants at `at` (what the cap is checked against). */
  readonly held: number;
  /** Set when `cls` is open. */
  readonly rank: RankKey | undefined;
  /** Targets of this proxy's unexpired target-scoped cooldowns (as indexed). */
  readonly scopedTargets: readonly string[];
}

interface View {
  readonly labels: Readonly<Record<string, string>>;
  readonly members: Set<string>;
  unhealthy: number;
  cooling: number;
  full: number;
  readonly open: SortedChunks<RankKey>;
}

/** The classification of proxies for an acquisition without candidates. */
export interface IndexedRanking {
  readonly stats: ProxyStats;
  /** Up to `limit` eligible proxies in the order to ask them. */
  readonly eligible: readonly string[];
}

/** Where the index reads proxy states from. */
export interface ProxyStateSource {
  stateOf(name: string): ProxyState;
  states(): Iterable<ProxyState>;
}

/** Selection's view of every registered proxy, ordered and counted. */
export class ProxySelectionIndex {
  private readonly entries = new Map<string, Entry>();
  private readonly views = new Map<string, View>();
  private readonly timers = new MinHeap();
  /** The earliest boundary in the heap per proxy, so a refresh does not push one it already has. */
  private readonly scheduled = new Map<string, number>();
  /** Unfolded grants of this instance by proxy: lease id -> expiry (epoch ms). */
  private readonly unfolded = new Map<string, Map<string, number>>();
  private readonly asking = new Map<string, number>();
  /** target -> proxy -> end of its cooldown for that target (epoch ms). */
  private readonly scoped = new Map<string, Map<string, number>>();
  private at = -Infinity;

  constructor(private readonly source: ProxyStateSource) {
    this.views.set("", newView({}));
  }

  /** Re-classifies one proxy after its state or extra load changed. */
  refresh(name: string): void {
    if (this.at === -Infinity) return; // nothing evaluated yet: the first advance builds everything
    this.remove(name);
    const state = this.source.stateOf(name);
    const registration = state.registration;
    if (registration === null) return;
    const at = this.at;
    let next = Infinity;
    const scopedTargets: string[] = [];
    for (const [target, cooldown] of state.cooldowns) {
      if (target === GLOBAL_COOLDOWN || cooldown.untilMs <= at) continue;
      scopedTargets.push(target);
      let byProxy = this.scoped.get(target);
      if (byProxy === undefined) this.scoped.set(target, (byProxy = new Map<string, number>()));
      byProxy.set(name, cooldown.untilMs);
    }
    let held = 0;
    for (const lease of state.leases.values()) {
      if (at < lease.expiresAtMs) {
        held++;
        if (lease.expiresAtMs < next) next = lease.expiresAtMs;
      }
    }
    const mine = this.unfolded.get(name);
    if (mine !== undefined) {
      for (const expiresAtMs of mine.values()) {
        if (at < expiresAtMs) {
          held++;
          if (expiresAtMs < next) next = expiresAtMs;
        }
      }
    }
    const global = state.cooldowns.get(GLOBAL_COOLDOWN);
    let cls: Class;
    if (!registration.healthy) cls = "unhealthy";
    else if (global !== undefined && at < global.untilMs) {
      cls = "cooling";
      if (global.untilMs < next) next = global.untilMs;
    } else cls = held >= registration.maxLeases ? "full" : "open";
    const rank = cls === "open" ? { load: held + (this.asking.get(name) ?? 0), latencyMs: registration.latencyMs, name } : undefined;
    const entry: Entry = { name, registration, cls, held, rank, scopedTargets };
    this.entries.set(name, entry);
    for (const view of this.views.values()) if (labelsMatch(registration.labels, view.labels)) enter(view, entry);
    if (next !== Infinity && cls !== "unhealthy") {
      const pending = this.scheduled.get(name);
      if (pending === undefined || next < pending) {
        this.scheduled.set(name, next);
        this.timers.push(next, name);
      }
    }
  }

  /** Re-classifies every proxy at `now`. */
  rebuild(now: number): void {
    this.entries.clear();
    this.scoped.clear();
    this.timers.clear();
    this.scheduled.clear();
    for (const view of this.views.values()) clearView(view);
    this.at = now;
    for (const state of this.source.states()) this.refresh(state.name);
  }

  /** Moves the evaluation instant to `now` (a rebuild when the clock went back). */
  advance(now: number): void {
    if (now < this.at || this.at === -Infinity) return this.rebuild(now);
    this.at = now;
    for (let t = this.timers.peek(); t !== undefined && t.at <= now; t = this.timers.peek()) {
      this.timers.pop();
      if (this.scheduled.get(t.name) === t.at) this.scheduled.delete(t.name);
      this.refresh(t.name);
    }
  }

  /** A grant of this instance the fold has not reached yet. */
  addUnfolded(proxy: string, leaseId: string, expiresAtMs: number): void {
    let mine = this.unfolded.get(proxy);
    if (mine === undefined) this.unfolded.set(proxy, (mine = new Map<string, number>()));
    mine.set(leaseId, expiresAtMs);
    this.refresh(proxy);
  }

  /** The fold reached an unfolded grant (the fold's own refresh of the proxy follows). */
  forgetUnfolded(proxy: string, leaseId: string): void {
    const mine = this.unfolded.get(proxy);
    if (mine === undefined || !mine.delete(leaseId)) return;
    if (mine.size === 0) this.unfolded.delete(proxy);
  }

  /** States were replaced wholesale (a snapshot was loaded): the next query rebuilds everything. */
  invalidate(): void {
    this.at = -Infinity;
  }

  /** Unexpired unfolded grants on `proxy` at `now`. */
  unfoldedOn(proxy: string, now: number): number {
    let n = 0;
    for (const expiresAtMs of this.unfolded.get(proxy)?.values() ?? []) if (now < expiresAtMs) n++;
    return n;
  }

  /** A grant asked of `proxy` started (+1) or was answered (-1). */
  noteAsking(proxy: string, delta: number): void {
    const n = (this.asking.get(proxy) ?? 0) + delta;
    if (n <= 0) this.asking.delete(proxy);
    else this.asking.set(proxy, n);
    const entry = this.entries.get(proxy);
    if (entry?.cls === "open") this.refresh(proxy);
  }

  /** Grants asked of `proxy` and not answered yet. */
  askingOf(proxy: string): number {
    return this.asking.get(proxy) ?? 0;
  }

  /**
   * Stats over every registered proxy whose labels hold `labels`, and the
   * first `limit` eligible ones in order, for an acquisition for `target` at
   * `now` (the same as ranking every proxy; see select.ts).
   */
  rank(labels: Readonly<Record<string, string>>, target: string, now: number, limit: number): IndexedRanking {
    this.advance(now);
    const view = this.viewFor(labels);
    const stats: ProxyStats = { considered: view.members.size, unhealthy: view.unhealthy, inCooldown: view.cooling, atCapacity: view.full };
    let skip: Set<string> | undefined;
    const cooling = target === GLOBAL_COOLDOWN ? undefined : this.scoped.get(target);
    if (cooling !== undefined) {
      for (const [name, untilMs] of cooling) {
        if (untilMs <= now) {
          cooling.delete(name);
          continue;
        }
        if (!view.members.has(name)) continue;
        const cls = this.entries.get(name)?.cls;
        if (cls === "full") {
          stats.atCapacity--;
          stats.inCooldown++;
        } else if (cls === "open") {
          stats.inCooldown++;
          (skip ??= new Set()).add(name);
        }
      }
      if (cooling.size === 0) this.scoped.delete(target);
    }
    const eligible: string[] = [];
    if (limit > 0) {
      view.open.visitUntil((key) => {
        if (skip?.has(key.name) !== true) eligible.push(key.name);
        return eligible.length >= limit;
      });
    }
    return { stats, eligible };
  }

  /**
   * Drops unfolded grants expired at `now` that a query has also seen expire
   * (they count nowhere from then on). The views were classified at the last
   * evaluated instant and must agree with the grants they counted, so nothing
   * later than it is dropped, and nothing before the first query or after
   * {@link invalidate}.
   */
  prune(now: number): void {
    const horizon = Math.min(now, this.at);
    for (const [proxy, mine] of this.unfolded) {
      for (const [id, expiresAtMs] of mine) if (horizon >= expiresAtMs) mine.delete(id);
      if (mine.size === 0) this.unfolded.delete(proxy);
    }
  }

  /** How many proxies, label views and pending boundaries the index holds (tests, diagnostics). */
  get sizes(): { proxies: number; views: number; timers: number } {
    return { proxies: this.entries.size, views: this.views.size, timers: this.timers.size };
  }

  private remove(name: string): void {
    const entry = this.entries.get(name);
    if (entry === undefined) return;
    this.entries.delete(name);
    for (const target of entry.scopedTargets) {
      const byProxy = this.scoped.get(target);
      byProxy?.delete(name);
      if (byProxy?.size === 0) this.scoped.delete(target);
    }
    for (const view of this.views.values()) if (view.members.has(name)) leave(view, entry);
  }

  private viewFor(labels: Readonly<Record<string, string>>): View {
    const pairs = Object.entries(labels);
    if (pairs.length === 0) return this.views.get("")!;
    const key = JSON.stringify(pairs.sort(([a], [b]) => compareNames(a, b)));
    let view = this.views.get(key);
    if (view !== undefined) {
      // Most recently used last, so eviction takes the oldest.
      this.views.delete(key);
      this.views.set(key, view);
      return view;
    }
    view = newView(Object.fromEntries(pairs));
    for (const entry of this.entries.values()) if (labelsMatch(entry.registration.labels, view.labels)) enter(view, entry);
    this.views.set(key, view);
    if (this.views.size > MAX_VIEWS + 1) {
      for (const old of this.views.keys()) {
        if (old === "") continue;
        this.views.delete(old);
        break;
      }
    }
    return view;
  }
}

function newView(labels: Readonly<Record<string, string>>): View {
  return { labels, members: new Set(), unhealthy: 0, cooling: 0, full: 0, open: new SortedChunks(byRank) };
}

function clearView(view: View): void {
  view.members.clear();
  view.unhealthy = view.cooling = view.full = 0;
  view.open.clear();
}

function enter(view: View, entry: Entry): void {
  view.members.add(entry.name);
  if (entry.cls === "unhealthy") view.unhealthy++;
  else if (entry.cls === "cooling") view.cooling++;
  else if (entry.cls === "full") view.full++;
  else view.open.add(entry.rank!);
}

function leave(view: View, entry: Entry): void {
  view.members.delete(entry.name);
  if (entry.cls === "unhealthy") view.unhealthy--;
  else if (entry.cls === "cooling") view.cooling--;
  else if (entry.cls === "full") view.full--;
  else view.open.delete(entry.rank!);
}

/** A binary min-heap of (instant, proxy) boundaries; stale ones are harmless (a refresh is idempotent). */
class MinHeap {
  private items: { at: number; name: string }[] = [];

  get size(): number {
    return this.items.length;
  }

  clear(): void {
    this.items = [];
  }

  peek(): { at: number; name: string } | undefined {
    return this.items[0];
  }

  push(at: number, name: string): void {
    const items = this.items;
    items.push({ at, name });
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.at <= items[i]!.at) break;
      [items[parent], items[i]] = [items[i]!, items[parent]!];
      i = parent;
    }
  }

  pop(): void {
    const items = this.items;
    const last = items.pop();
    if (last === undefined || items.length === 0) return;
    items[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < items.length && items[l]!.at < items[m]!.at) m = l;
      if (r < items.length && items[r]!.at < items[m]!.at) m = r;
      if (m === i) return;
      [items[m], items[i]] = [items[i]!, items[m]!];
      i = m;
    }
  }
}
