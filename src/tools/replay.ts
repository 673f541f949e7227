/**
 * `leasehold replay`: folds the stream up to an instant or a sequence and
 * shows every actor's state as of that instant, in the shapes the service
 * answers (`proxy.list`, `host.list`, `route.get`, `lock.get`), so a replay at
 * T equals what the service said at T. Expiry is arithmetic: a lock's lease
 * is live at T iff `expiresAt > T`, a proxy lease active iff `T < expiresAt`,
 * a cooldown iff `T < untilAt`.
 */
import type { StoredMessage } from "../events/event-log.ts";
import type { ActorKind, Subjects } from "../contract/subjects.ts";
import { routeLeaseView, sortedLeases, type RouteLeaseView } from "../route/state.ts";
import { compareCodeUnits } from "../contract/code-units.ts";
import { leaseView, type LeaseView } from "../lock/state.ts";
import { proxyView, type ProxyView } from "../proxy/state.ts";
import { queueAt } from "../lock/state.ts";
import { resolveSessions } from "../lock/session-waiters.ts";
import { OPEN_END } from "../lock/state.ts";
import { sessionLiveAt, type SessionLookup } from "../session/state.ts";
import { StreamFold } from "./stream-fold.ts";
import type { StreamSource } from "./stream-reader.ts";
import { iso } from "./time.ts";

/** Which actors to show: one kind, and within it (or across kinds) one id; with `changed`, only actors it holds. */
export interface ReplayFilter {
  readonly kind?: ActorKind | undefined;
  readonly id?: string | undefined;
  /** Actors ({@link actorKey}) with a message since `--since`; absent: every actor. */
  readonly changed?: ReadonlySet<string> | undefined;
}

/** The key of an actor in {@link ReplayFilter.changed} (a kind has no colon, so it cannot be ambiguous). */
export function actorKey(kind: ActorKind, id: string): string {
  return `${kind}:${id}`;
}

/** A lock as of the replay instant. */
export interface LockReplayView {
  readonly name: string;
  /** `held` (live lease), `expired` (a lease is recorded but over), `free`, or `corrupt` (the lock refuses its history). */
  readonly state: "held" | "expired" | "free" | "corrupt";
  /** The live lease, as `lock.get` answers it (null when free or expired). */
  readonly lease: LeaseView | null;
  /** The lease the history records, live or not. */
  readonly recorded: LeaseView | null;
  /** The highest generation granted so far. */
  readonly generation: number;
  readonly corrupt: string | null;
  /** Acquires waiting in the lock's queue at the replay instant, as `lock.get` counts them. */
  readonly waiters: number;
  /** The principal that created the recorded lease; absent when unknown. */
  readonly by?: string;
}

/** A session as of the replay instant. */
export interface SessionReplayView {
  readonly id: string;
  readonly owner: string;
  readonly ttlMs: number;
  /** `live`, or `ended` (closed, or its expiresAt passed). */
  readonly state: "live" | "ended";
  readonly expiresAt: string;
  /** When it was closed, or null. */
  readonly closedAt: string | null;
  /** The locks it holds at the replay instant, sorted. */
  readonly locks: string[];
  /** The principal that opened it; absent when unknown. */
  readonly by?: string;
}

/** An unexpired proxy lease as of the replay instant. */
export interface ProxyLeaseReplayView {
  readonly proxy: string;
  readonly id: string;
  readonly target: string;
  readonly expiresAt: string;
  /** The principal it was granted to; absent when unknown. */
  readonly by?: string;
}

/** A host as `host.list` shows it. */
export interface HostReplayView {
  readonly host: string;
  readonly healthy: boolean;
  readonly draining: boolean;
  /** The cap on new route leases, null when unlimited. */
  readonly maxLeases: number | null;
  readonly active: number;
}

/** A route as `route.get` shows it, plus its seen set. */
export interface RouteReplayView {
  readonly route: string;
  readonly pinned: string;
  readonly leases: RouteLeaseView[];
  readonly seen: string[];
}

/** Every actor's state as of one instant (only the kinds the filter keeps). */
export interface ReplayView {
  /** The instant the state is shown at. */
  readonly at: string;
  /** The last stream sequence folded (0: nothing). */
  readonly seq: number;
  /** How many stream messages were folded. */
  readonly messages: number;
  /** Registered proxies, as `proxy.list` answers. */
  readonly proxies?: ProxyView[];
  /** Unexpired, unreleased proxy leases, by proxy then id. */
  readonly proxyLeases?: ProxyLeaseReplayView[];
  /** Hosts ever set, as `host.list` answers. */
  readonly hosts?: HostReplayView[];
  /** Routes with any history, by name. */
  readonly routes?: RouteReplayView[];
  /** Locks with any history, by name. */
  readonly locks?: LockReplayView[];
  /** Sessions ever opened, by id. */
  readonly sessions?: SessionReplayView[];
}

/** Where to stop folding: at the last message stored at or before `toTime`, and/or at sequence `toSeq`. */
export interface ReplayRange {
  readonly toSeq?: number | undefined;
  readonly toTime?: number | undefined;
  /** Note the actors with a message from this sequence on (`--since`)... */
  readonly sinceSeq?: number | undefined;
  /** ... or stored at or after this instant. */
  readonly sinceTime?: number | undefined;
}

/** A replay's fold, and the actors with a message since `--since` (when given). */
export interface ReplayFold {
  readonly fold: StreamFold;
  readonly changed: ReadonlySet<string> | undefined;
}

/**
 * Folds the stream from its start through `range` as {@link foldStream}, read
 * from `source` (the fast path of the tools: no per-message promise).
 * `onMessage` sees each message folded (progress).
 */
export async function foldSource(
  source: StreamSource,
  subjects: Subjects,
  range: ReplayRange = {},
  onMessage?: (message: StoredMessage) => void,
): Promise<ReplayFold> {
  const { fold, changed, step } = replayStepper(subjects, range);
  const { toTime } = range;
  await source.read({ toSeq: range.toSeq }, (m) => {
    if (toTime !== undefined && m.time > toTime) return false;
    step(m);
    onMessage?.(m);
    return true;
  });
  return { fold, changed };
}

/**
 * `replay` on this thread: the stream folded through `range` ({@link foldSource}),
 * shown as {@link replayViewOf} shows it. Its two-thread counterpart, with the
 * same arguments and answer, is `replayInWorker`.
 */
export async function replaySource(
  source: StreamSource,
  subjects: Subjects,
  range: ReplayRange = {},
  filter: Omit<ReplayFilter, "changed"> = {},
  onMessage?: (message: StoredMessage) => void,
): Promise<ReplayView> {
  return replayViewOf(await foldSource(source, subjects, range, onMessage), range, filter, Date.now());
}

/**
 * What a replay shows of its fold: the actors `filter` keeps (only those
 * changed since the range's `since`, when it has one) as of the range's end
 * ({@link replayInstant}; `now` when it has none).
 */
export function replayViewOf(
  { fold, changed }: ReplayFold,
  range: ReplayRange,
  filter: Omit<ReplayFilter, "changed">,
  now: number,
): ReplayView {
  return replayView(fold, replayInstant(fold, range, now), { kind: filter.kind, id: filter.id, changed });
}

/**
 * A replay's fold, one message at a time (for {@link foldSource} and the
 * tools' fold worker alike): `step` folds a message and, when `range` has a
 * `since`, notes the actor it changed from then on in `changed`.
 */
export function replayStepper(subjects: Subjects, range: ReplayRange): ReplayFold & { step: (m: StoredMessage) => void } {
  const fold = new StreamFold(subjects);
  const { sinceSeq, sinceTime } = range;
  const changed = sinceSeq !== undefined || sinceTime !== undefined ? new Set<string>() : undefined;
  const step = (m: StoredMessage): void => {
    const actor = fold.actorOf(m.subject);
    fold.applyTo(m, actor);
    if (changed !== undefined && ((sinceSeq !== undefined && m.seq >= sinceSeq) || (sinceTime !== undefined && m.time >= sinceTime))) {
      if (actor !== null) changed.add(actorKey(actor.kind, actor.id));
    }
  };
  return { fold, changed, step };
}

/**
 * Folds `messages` (the stream from its start, in order) and stops after the
 * last one within `range`. Reading stops there too, so `--seq 10` on a huge
 * stream reads ten messages.
 */
export async function foldStream(messages: AsyncIterable<StoredMessage>, subjects: Subjects, range: ReplayRange = {}): Promise<StreamFold> {
  const fold = new StreamFold(subjects);
  for await (const m of messages) {
    if ((range.toSeq !== undefined && m.seq > range.toSeq) || (range.toTime !== undefined && m.time > range.toTime)) break;
    fold.apply(m);
  }
  return fold;
}

/**
 * The instant a replay shows: `--at` when given, else (`--seq` alone) the
 * stored time of the last message folded, else now.
 */
export function replayInstant(fold: StreamFold, range: ReplayRange, now: number): number {
  if (range.toTime !== undefined) return range.toTime;
  if (range.toSeq !== undefined) return fold.seq > 0 ? fold.time : now;
  return now;
}

/** The state of every actor the filter keeps, as of `atMs`. */
export function replayView(fold: StreamFold, atMs: number, filter: ReplayFilter = {}): ReplayView {
  const keep = (kind: ActorKind, id: string) =>
    (filter.kind === undefined || filter.kind === kind) &&
    (filter.id === undefined || filter.id === id) &&
    (filter.changed === undefined || filter.changed.has(actorKey(kind, id)));
  const shows = (kind: ActorKind) => filter.kind === undefined || filter.kind === kind;
  const byName = <T>(map: ReadonlyMap<string, T>): [string, T][] => [...map].sort(([a], [b]) => compareCodeUnits(a, b));
  const { states } = fold;
  const view: { -readonly [K in keyof ReplayView]: ReplayView[K] } = { at: iso(atMs), seq: fold.seq, messages: fold.messages };

  if (shows("proxy")) {
    view.proxies = [];
    view.proxyLeases = [];
    for (const [name, state] of byName(states.proxy)) {
      if (!keep("proxy", name)) continue;
      if (state.registration !== null) view.proxies.push(proxyView(state, state.registration, atMs));
      for (const lease of [...state.leases.values()].sort((a, b) => compareCodeUnits(a.id, b.id))) {
        if (atMs < lease.expiresAtMs)
          view.proxyLeases.push({ proxy: name, id: lease.id, target: lease.target, expiresAt: lease.expiresAt, ...byOf(lease) });
      }
    }
  }
  if (shows("host")) {
    const active = new Map<string, number>();
    for (const route of states.route.values()) for (const l of route.leases.values()) active.set(l.host, (active.get(l.host) ?? 0) + 1);
    view.hosts = byName(states.host)
      .filter(([name, h]) => h.set && keep("host", name))
      .map(([name, h]) => ({
        host: name,
        healthy: h.healthy,
        draining: h.draining,
        maxLeases: h.maxLeases,
        active: active.get(name) ?? 0,
      }));
  }
  if (shows("route")) {
    view.routes = byName(states.route)
      .filter(([name]) => keep("route", name))
      .map(([name, r]) => ({
        route: name,
        pinned: r.pinned,
        leases: sortedLeases(r).map((l) => routeLeaseView(name, l)),
        seen: [...r.seen].sort(compareCodeUnits),
      }));
  }
  // A session lease ends with its session: the lock is read with its sessions' ends, as its decisions read them.
  const sessions: SessionLookup = { get: (id) => (states.session.get(id)?.opened === true ? states.session.get(id) : undefined) };
  if (shows("lock")) {
    view.locks = byName(states.lock)
      .filter(([name]) => keep("lock", name))
      .map(([name, folded]) => {
        const l = resolveSessions(folded, sessions, atMs).state;
        const recorded = l.lease === null ? null : leaseView(name, l.lease);
        const live = l.lease !== null && l.lease.expiresAtMs > atMs;
        const state = l.corrupt !== null ? "corrupt" : l.lease === null ? "free" : live ? "held" : "expired";
        return {
          name,
          state,
          lease: live && l.corrupt === null ? recorded : null,
          recorded,
          generation: l.generation,
          corrupt: l.corrupt,
          waiters: queueAt(l, atMs).liveCount,
          ...byOf(l.lease ?? {}),
        };
      });
  }
  if (shows("session")) {
    const held = new Map<string, string[]>();
    for (const [name, l] of byName(states.lock)) {
      const session = l.lease?.session;
      if (session !== undefined && l.lease!.expiresAtMs === OPEN_END) held.set(session, [...(held.get(session) ?? []), name]);
    }
    view.sessions = byName(states.session)
      .filter(([id, s]) => s.opened && keep("session", id))
      .map(([id, s]) => {
        const live = sessionLiveAt(s, atMs);
        return {
          id,
          owner: s.owner,
          ttlMs: s.ttlMs,
          state: live ? "live" : "ended",
          expiresAt: s.expiresAt,
          closedAt: s.closedAtMs === null ? null : iso(s.closedAtMs),
          locks: live ? (held.get(id) ?? []) : [],
          ...byOf(s),
        };
      });
  }
  return view;
}

/** `{by}` when a principal is recorded, else nothing (views of a deployment without principals stay as they were). */
function byOf(holder: { readonly by?: string | undefined }): { by?: string } {
  return holder.by === undefined ? {} : { by: holder.by };
}
