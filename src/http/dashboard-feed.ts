/**
 * What the dashboard shows: the service instance's own folded states (its
 * projections, which follow the whole stream; no second fold), the latest
 * events from a follower of the stream's tail, and the stream's last
 * sequence, learnt every second (bounded), which gives `/readyz` and the lag
 * metrics their answer without a scrape ever waiting on NATS.
 */
import type { Logger } from "pino";
import { isUnparsable } from "../events/envelope.ts";
import { decodeEvent } from "../events/decode.ts";
import { type EventLog, type Following, type StoredMessage } from "../events/event-log.ts";
import { type ActorKind, type Subjects } from "../contract/subjects.ts";
import { activeCooldowns, activeLeases, compareNames, type ProxyState } from "../proxy/state.ts";
import { resolveSessions } from "../lock/session-waiters.ts";
import { type HostState } from "../host/state.ts";
import { type LockState } from "../lock/state.ts";
import { type RouteState } from "../route/state.ts";
import { type SessionState } from "../session/state.ts";
import { actorOfSubject } from "../tools/stream-fold.ts";
import type { ServiceStates, StateMap } from "./service-states.ts";
import { withDeadline } from "../events/deadline.ts";
import { queueAt } from "../lock/state.ts";
import { sessionEndMs, sessionLiveAt, type SessionLookup } from "../session/state.ts";

/** A lock as the dashboard lists it (held and unexpired, or corrupt). */
export interface LockRow {
  readonly name: string;
  readonly owner: string;
  readonly generation: number;
  readonly expiresAtMs: number;
  readonly ttlMs: number;
  readonly corrupt: string | null;
  /** Acquires waiting in the lock's queue. */
  readonly waiters: number;
  /** The session the lease hangs on, null for a lease of its own. */
  readonly session: string | null;
  /** The principal whose request created the lease, null when unknown. */
  readonly by: string | null;
}

/** A live session with the locks held under it. */
export interface SessionRow {
  readonly id: string;
  readonly owner: string;
  readonly ttlMs: number;
  readonly expiresAtMs: number;
  /** Names of the first {@link ROW_LIST_CAP} locks it holds now, sorted. */
  readonly locks: readonly string[];
  /** How many locks it holds now. */
  readonly lockCount: number;
  /** The principal whose request opened it, null when unknown. */
  readonly by: string | null;
}

/** A registered proxy with its load and cooldowns. */
export interface ProxyRow {
  readonly proxy: string;
  readonly maxLeases: number;
  readonly latencyMs: number;
  readonly labels: Readonly<Record<string, string>>;
  readonly active: number;
  readonly healthy: boolean;
  readonly cooldowns: readonly { readonly target: string; readonly untilMs: number }[];
  /** The principals holding its unexpired leases and how many each, by principal; leases of unknown principal are not listed. */
  readonly holders: readonly { readonly by: string; readonly leases: number }[];
}

/** A host with its health and the route leases placed on it. */
export interface HostRow {
  readonly host: string;
  /** False for a host that route leases name but `host.set` never recorded. */
  readonly known: boolean;
  readonly healthy: boolean;
  readonly draining: boolean;
  /** The cap on new route leases, null when unlimited; full when the leases reach it. */
  readonly maxLeases: number | null;
  /** The load the host last published, null when unknown or stale. */
  readonly load: number | null;
  /** How many route leases it holds. */
  readonly leaseCount: number;
  /** The first {@link ROW_LIST_CAP} of them, sorted (a row's size does not grow with what clients place). */
  readonly leases: readonly { readonly route: string; readonly fp: string; readonly model: string }[];
}

/** One recent event, newest first in the view. */
export interface EventRow {
  readonly seq: number;
  readonly at: string;
  readonly kind: string;
  readonly id: string;
  readonly type: string;
  readonly detail: string;
  /** The principal whose request caused it (the envelope's `by`, 1.3), null when unknown. */
  readonly by: string | null;
}

/** One of the stream's latest messages, with its row once a view has decoded it. */
interface LatestMessage {
  readonly seq: number;
  readonly subject: string;
  readonly time: number;
  readonly payload: Uint8Array;
  row?: EventRow;
}

/** Everything the page renders, computed at one instant. */
export interface DashboardView {
  readonly nowMs: number;
  readonly seq: number;
  readonly lastSeq: number;
  readonly caughtUp: boolean;
  readonly locks: readonly LockRow[];
  readonly sessions: readonly SessionRow[];
  readonly proxies: readonly ProxyRow[];
  readonly hosts: readonly HostRow[];
  readonly events: readonly EventRow[];
  /** How many rows each table would have without the cap (the page says when it shows fewer). */
  readonly totals: { readonly locks: number; readonly sessions: number; readonly proxies: number; readonly hosts: number };
}

/** The loads hosts publish, as the service instance keeps them (not events: the stream has none). */
export interface HostLoadSource {
  loadOf(host: string): number | null;
}

/** Settings of a {@link DashboardFeed}. */
export interface DashboardFeedOptions {
  readonly log: EventLog;
  /** The instance's folded states the tables are read from. */
  readonly states: ServiceStates;
  /** Host loads to show beside each host (absent: every load unknown). */
  readonly hostLoads?: HostLoadSource;
  readonly subjects: Subjects;
  readonly logger: Logger;
  readonly now?: () => number;
  /** How many latest events the view carries (default 50). */
  readonly recentEvents?: number;
  /** Rows per table at most (default 500; the rest are counted). */
  readonly maxRows?: number;
  /** How often the stream's last sequence is learnt (default 1000 ms). */
  readonly pollMs?: number;
  /** Deadline of every NATS call (default 2000 ms). */
  readonly timeoutMs?: number;
  /** Listeners are told at most this often (default 50 ms), so a catch-up does not flood them. */
  readonly coalesceMs?: number;
}

/** Reads the instance's states, follows the stream's tail and answers {@link DashboardView}s. */
export class DashboardFeed {
  private readonly states: ServiceStates;
  /** The last sequence the tail follower delivered. */
  private tailSeq = 0;
  /** The stream's latest messages, oldest first, at most `recentEvents`. */
  private readonly latest: LatestMessage[] = [];
  private readonly listeners = new Set<() => void>();
  private following: Following | undefined;
  private poller: NodeJS.Timeout | undefined;
  private notifyTimer: NodeJS.Timeout | undefined;
  private startSeq: number | undefined;
  private learntLastSeq = 0;
  private reachableAt = 0;
  private stopped = false;
  private readonly now: () => number;
  private readonly recentEvents: number;
  private readonly maxRows: number;
  private readonly pollMs: number;
  private readonly timeoutMs: number;
  private readonly coalesceMs: number;

  constructor(private readonly options: DashboardFeedOptions) {
    this.states = options.states;
    this.now = options.now ?? Date.now;
    this.recentEvents = options.recentEvents ?? 50;
    this.maxRows = options.maxRows ?? 500;
    this.pollMs = options.pollMs ?? 1000;
    this.timeoutMs = options.timeoutMs ?? 2000;
    this.coalesceMs = options.coalesceMs ?? 50;
  }

  /** Learns where the stream ends, follows it from its latest events on, and keeps learning its end. */
  async start(): Promise<void> {
    this.startSeq = await this.learnLastSeq();
    this.tailSeq = Math.max(0, this.startSeq - this.recentEvents);
    this.following = await withDeadline(
      this.options.log.follow(this.tailSeq + 1, (m) => this.onMessage(m), this.options.subjects.allEvents),
      this.timeoutMs,
      "starting to follow the event stream",
    );
    this.poller = setInterval(() => void this.learnLastSeq().catch(() => undefined), this.pollMs);
    this.poller.unref();
  }

  /** Stops following and polling. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.poller);
    clearTimeout(this.notifyTimer);
    this.listeners.clear();
    await this.following?.stop();
  }

  /** Calls `listener` (coalesced) whenever the view may have changed; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Has the tail follower read up to the stream's last sequence as of start
   * (the stream is readable)? Whether the instance's states are caught up
   * is the runtime's readiness, which `/readyz` adds.
   */
  get caughtUp(): boolean {
    return this.startSeq !== undefined && this.tailSeq >= this.startSeq;
  }

  /** The highest sequence folded into the instance's states. */
  private get foldedSeq(): number {
    return this.states.foldedSeq();
  }

  /** Was the stream's end learnt within the last three polls (NATS and the stream reachable)? */
  get reachable(): boolean {
    return this.now() - this.reachableAt <= 3 * this.pollMs + this.timeoutMs;
  }

  /** The stream's last sequence as last learnt (or folded, if that is further). */
  get lastSeq(): number {
    return Math.max(this.learntLastSeq, this.foldedSeq);
  }

  /** Events the states are behind the stream. */
  get lag(): number {
    return Math.max(0, this.learntLastSeq - this.foldedSeq);
  }

  /** Live leases at `now` by kind, from the folded states. */
  liveLeases(now: number): Record<ActorKind, number> {
    let lock = 0;
    const sessions = lookupOf(this.states.session);
    for (const folded of this.states.lock.values()) {
      const s = resolveSessions(folded, sessions, now).state;
      if (s.lease !== null && now < s.lease.expiresAtMs) lock++;
    }
    let proxy = 0;
    for (const s of this.states.proxy.values()) proxy += activeLeases(s, now);
    let route = 0;
    for (const s of this.states.route.values()) route += s.leases.size;
    let session = 0;
    for (const s of this.states.session.values()) if (sessionLiveAt(s, now)) session++;
    return { lock, proxy, route, host: 0, session };
  }

  /** The view at the current instant. */
  view(): DashboardView {
    const nowMs = this.now();
    const { lock, proxy, host, route, session } = this.states;
    const locks = lockRows(lock, nowMs, lookupOf(session));
    const sessions = sessionRows(session, locks, nowMs);
    const proxies = proxyRows(proxy, nowMs);
    const hosts = hostRows(host, route, this.options.hostLoads);
    return {
      nowMs,
      seq: this.foldedSeq,
      lastSeq: this.lastSeq,
      caughtUp: this.caughtUp,
      locks: locks.slice(0, this.maxRows),
      sessions: sessions.slice(0, this.maxRows),
      proxies: proxies.slice(0, this.maxRows),
      hosts: hosts.slice(0, this.maxRows),
      events: this.latest.map((m) => this.rowOf(m)).reverse(),
      totals: { locks: locks.length, sessions: sessions.length, proxies: proxies.length, hosts: hosts.length },
    };
  }

  private async learnLastSeq(): Promise<number> {
    const seq = await withDeadline(this.options.log.lastSeq(), this.timeoutMs, "reading the event stream's last sequence");
    this.learntLastSeq = seq;
    this.reachableAt = this.now();
    return seq;
  }

  private onMessage(message: StoredMessage): void {
    if (this.stopped) return;
    this.tailSeq = message.seq;
    // Kept as read (the payload copied off the socket's buffer) and decoded only when a view shows it:
    // most events scroll out of the latest few unseen, and the service's projections decode them already.
    this.latest.push({ seq: message.seq, subject: message.subject, time: message.time, payload: message.payload.slice() });
    if (this.latest.length > this.recentEvents) this.latest.shift();
    this.scheduleNotify();
  }

  /** The row of one of the latest messages, decoded once. */
  private rowOf(m: LatestMessage): EventRow {
    if (m.row !== undefined) return m.row;
    const entry = decodeEvent(m.payload, m.seq);
    if (isUnparsable(entry)) {
      const actor = actorOfSubject(this.options.subjects, m.subject);
      m.row = {
        seq: m.seq,
        at: new Date(m.time).toISOString(),
        kind: actor?.kind ?? "?",
        id: actor?.id ?? m.subject,
        type: "(unparsable)",
        detail: entry.reason.slice(0, 160),
        by: null,
      };
    } else {
      const { event } = entry;
      m.row = {
        seq: m.seq,
        at: event.at,
        kind: event.kind,
        id: event.id,
        type: event.type,
        detail: detailOf(event.data),
        by: event.by ?? null,
      };
    }
    return m.row;
  }

  private scheduleNotify(): void {
    if (this.notifyTimer !== undefined || this.listeners.size === 0) return;
    this.notifyTimer = setTimeout(() => {
      this.notifyTimer = undefined;
      for (const listener of this.listeners) {
        try {
          listener();
        } catch (err) {
          this.options.logger.warn({ err }, "dashboard listener failed");
        }
      }
    }, this.coalesceMs);
  }
}

/** A short `key=value` line of an event's data (long values cut). */
function detailOf(data: unknown): string {
  if (data === null || typeof data !== "object") return "";
  const parts: string[] = [];
  for (const [key, value] of Object.entries(data as Record<string, unknown>)) {
    if (key === "stats") continue;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    parts.push(`${key}=${text.length > 40 ? `${text.slice(0, 39)}…` : text}`);
  }
  const line = parts.join(" ");
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/** The folded sessions as a lock's decision reads them: a session lease ends with its session. */
function lookupOf(sessions: StateMap<SessionState>): SessionLookup {
  return {
    get: (id) => {
      const session = sessions.get(id);
      return session?.opened === true ? session : undefined;
    },
  };
}

/** Lock rows, each read against its sessions' ends. */
function lockRows(locks: StateMap<LockState>, nowMs: number, sessions: SessionLookup): LockRow[] {
  const rows: LockRow[] = [];
  for (const folded of locks.values()) {
    const s = resolveSessions(folded, sessions, nowMs).state;
    const live = s.lease !== null && nowMs < s.lease.expiresAtMs;
    if (!live && s.corrupt === null) continue;
    rows.push({
      name: s.name,
      owner: s.lease?.owner ?? "",
      generation: s.lease?.generation ?? s.generation,
      expiresAtMs: s.lease?.expiresAtMs ?? 0,
      ttlMs: s.lease?.ttlMs ?? 0,
      corrupt: s.corrupt,
      waiters: queueAt(s, nowMs).liveCount,
      session: s.lease?.session ?? null,
      by: s.lease?.by ?? null,
    });
  }
  return rows.sort((a, b) => compareNames(a.name, b.name));
}

function sessionRows(sessions: StateMap<SessionState>, locks: readonly LockRow[], nowMs: number): SessionRow[] {
  const held = new Map<string, string[]>();
  for (const l of locks) {
    if (l.session === null || l.corrupt !== null) continue;
    let names = held.get(l.session);
    if (names === undefined) held.set(l.session, (names = []));
    names.push(l.name); // locks come sorted, so each list is too
  }
  const rows: SessionRow[] = [];
  for (const s of sessions.values()) {
    if (!sessionLiveAt(s, nowMs)) continue;
    rows.push({
      id: s.id,
      owner: s.owner,
      ttlMs: s.ttlMs,
      expiresAtMs: sessionEndMs(s),
      locks: (held.get(s.id) ?? []).slice(0, ROW_LIST_CAP),
      lockCount: held.get(s.id)?.length ?? 0,
      by: s.by ?? null,
    });
  }
  return rows.sort((a, b) => compareNames(a.id, b.id));
}

/**
 * Items of a list inside one row (a session's locks, a host's route leases)
 * the view carries; the row says how many there are. The page shows eight.
 * Without it one client's placements on one host made every view megabytes.
 */
export const ROW_LIST_CAP = 8;
/** Labels of a proxy the view carries, and the length of each key and value shown. */
const VIEW_LABELS = 16;
const VIEW_LABEL_CHARS = 128;

/** A proxy's labels as the view carries them: the first {@link VIEW_LABELS}, each key and value cut to {@link VIEW_LABEL_CHARS}. */
function cappedLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  const cut = (s: string) => (s.length > VIEW_LABEL_CHARS ? `${s.slice(0, VIEW_LABEL_CHARS)}…` : s);
  return Object.fromEntries(
    Object.entries(labels)
      .slice(0, VIEW_LABELS)
      .map(([k, v]) => [cut(k), cut(v)]),
  );
}

function proxyRows(proxies: StateMap<ProxyState>, nowMs: number): ProxyRow[] {
  const rows: ProxyRow[] = [];
  for (const s of proxies.values()) {
    if (s.registration === null) continue;
    rows.push({
      proxy: s.name,
      maxLeases: s.registration.maxLeases,
      latencyMs: s.registration.latencyMs,
      labels: cappedLabels(s.registration.labels),
      active: activeLeases(s, nowMs),
      healthy: s.registration.healthy,
      cooldowns: activeCooldowns(s, nowMs).map((c) => ({ target: c.target, untilMs: Date.parse(c.untilAt) })),
      holders: holdersOf(s, nowMs),
    });
  }
  return rows.sort((a, b) => compareNames(a.proxy, b.proxy));
}

/** The principals behind a proxy's unexpired leases, with how many each holds, by principal. */
function holdersOf(proxy: ProxyState, nowMs: number): { by: string; leases: number }[] {
  const counts = new Map<string, number>();
  for (const lease of proxy.leases.values())
    if (lease.by !== undefined && lease.by !== "" && nowMs < lease.expiresAtMs) counts.set(lease.by, (counts.get(lease.by) ?? 0) + 1);
  return [...counts].map(([by, leases]) => ({ by, leases })).sort((a, b) => compareNames(a.by, b.by));
}

function hostRows(hosts: StateMap<HostState>, routes: StateMap<RouteState>, loads?: HostLoadSource): HostRow[] {
  const byHost = new Map<string, { route: string; fp: string; model: string }[]>();
  for (const r of routes.values()) {
    for (const l of r.leases.values()) {
      let list = byHost.get(l.host);
      if (list === undefined) byHost.set(l.host, (list = []));
      list.push({ route: r.route, fp: l.fp, model: l.model });
    }
  }
  const rows: HostRow[] = [];
  const names = new Set([...[...hosts.values()].filter((h) => h.set).map((h) => h.host), ...byHost.keys()]);
  for (const name of names) {
    const h = hosts.get(name);
    const leases = (byHost.get(name) ?? []).sort(
      (a, b) => compareNames(a.route, b.route) || compareNames(a.fp, b.fp) || compareNames(a.model, b.model),
    );
    rows.push({
      host: name,
      known: h?.set ?? false,
      healthy: h?.healthy ?? false,
      draining: h?.draining ?? false,
      maxLeases: h?.maxLeases ?? null,
      load: loads?.loadOf(name) ?? null,
      leaseCount: leases.length,
      leases: leases.slice(0, ROW_LIST_CAP),
    });
  }
  return rows.sort((a, b) => compareNames(a.host, b.host));
}
