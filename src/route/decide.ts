/**
 * The route decider: docs/protocol.md's Routes rules as a pure function of the
 * route's state, the command (which carries host health and loads) and the
 * server's instant. `route.acquire` follows the contract's order exactly:
 *
 * 1. pinned route: pin unhealthy → PINNED_DOWN; a lease for the key → reused;
 *    else a new lease on the pin;
 * 2. a lease for the key on a healthy host → reused (draining does not matter);
 * 3. a fingerprinted key inherits the host of the route's own lease
 *    `(fp "", model)` when that host is healthy (reported as reused);
 * 4. the chooser over healthy, non-draining candidates that are not full →
 *    new lease, or NO_HOST (with `full` when every such candidate is full).
 *    A lease chosen onto a capped host needs the host's admission first
 *    (docs/routes.md, "Host capacity"): without one the decider answers
 *    {@link AdmissionNeeded}; with one, bound to the route's current last
 *    sequence, it places the lease there.
 *
 * A lease that sat on an unhealthy host is replaced with reason `unhealthy`
 * and `from` set to that host.
 */
import { type Decision, recorder, reject, replyOnly } from "../actors/kind-logic.ts";
import type { RouteEvent } from "./events.ts";
import { leaseKey, sortedLeases, type RouteLease, type RouteState } from "./state.ts";
import type { LoadedHost } from "../host/index.ts";
import { leastLoadedChooser } from "./chooser.ts";
import { SeenLists } from "./seen-lists.ts";
import { touchEveryMs, type AcquireRoute, type AdmissionNeeded, type RouteCommand, type RouteSettings } from "./commands.ts";

const record = recorder<RouteEvent>();
/** The fp of a route's own lease (a conversation with no fingerprint), whose host the route's other conversations inherit. */
const ROUTE_WIDE_FP = "";

/**
 * The most hosts one route keeps as seen. Its seen set is part of its state
 * on every instance, copied when it grows: one client that sent a route
 * ever-new candidate names (6 MB of them) made each instance hold 300 MB for
 * it and spend a second on each later request that added a host, while every
 * other request waited (red team). A fleet is far smaller.
 */
export const MAX_ROUTE_HOSTS = 10_000;

/** Refused when `seen` would take the route past {@link MAX_ROUTE_HOSTS}; undefined otherwise. */
function pastSeenBound(state: RouteState, seen: readonly string[]): Decision<RouteEvent> | undefined {
  if (state.seen.size + seen.length <= MAX_ROUTE_HOSTS) return undefined;
  return reject(
    "BAD_REQUEST",
    `route ${JSON.stringify(state.route)} has seen ${state.seen.size} hosts; ${seen.length} more would pass the ${MAX_ROUTE_HOSTS} a route keeps`,
  );
}

/** Decides one route command at instant `now` (epoch ms). */
export function decideRoute(state: RouteState, command: RouteCommand, now: number, settings: RouteSettings): Decision<RouteEvent> {
  switch (command.op) {
    case "acquire":
      return decideAcquire(state, command, now, settings);
    case "move": {
      const moveSeen = newlySeen(state, [command.host]);
      const bounded = pastSeenBound(state, moveSeen);
      if (bounded !== undefined) return bounded;
      const from = state.leases.get(leaseKey(command.fp, command.model))?.host ?? "";
      // Always recorded: a move renews the lease's creation time.
      return record("RouteLeasePlaced", {
        fp: command.fp,
        model: command.model,
        host: command.host,
        from,
        reason: "ctx",
        reused: false,
        ...seenField(moveSeen),
      });
    }
    case "candidates":
    case "seen": {
      const seen = newlySeen(state, command.hosts);
      return seen.length === 0 ? replyOnly({}) : (pastSeenBound(state, seen) ?? record("RouteCandidatesSeen", { seen }));
    }
    case "pin": {
      if (!state.seen.has(command.host)) {
        return reject("UNKNOWN_HOST", `route ${state.route} has never seen host ${command.host} as a candidate`);
      }
      const displaced = sortedLeases(state)
        .filter((l) => l.host !== command.host)
        .map(leaseRef);
      if (state.pinned === command.host && displaced.length === 0) return replyOnly({});
      return record("RoutePinned", { host: command.host, displaced });
    }
    case "unpin":
      return state.pinned === "" ? replyOnly({}) : record("RouteUnpinned", {});
    case "release":
      return state.leases.size === 0
        ? replyOnly({ released: 0 })
        : record("RouteReleased", { released: sortedLeases(state).map(leaseRef) });
    case "lapse":
      // Only the route's very next event could have used the admission: taking that place settles it.
      return state.lastSeq === command.routeSeq
        ? record("RouteAdmissionLapsed", { host: command.host, admission: command.admission })
        : replyOnly({});
    case "expire": {
      const lease = state.leases.get(leaseKey(command.fp, command.model));
      if (lease === undefined || !isRouteLeaseIdle(lease, now, settings)) return replyOnly({ expired: false });
      return record("RouteLeaseExpired", { fp: lease.fp, model: lease.model, host: lease.host });
    }
  }
}

/** Has `lease` been unused for longer than `routeIdleMs` at `now`? */
export function isRouteLeaseIdle(lease: RouteLease, now: number, settings: Pick<RouteSettings, "routeIdleMs">): boolean {
  return now - lease.lastUsedAtMs > settings.routeIdleMs;
}

function decideAcquire(state: RouteState, command: AcquireRoute, now: number, settings: RouteSettings): Decision<RouteEvent> {
  const { fp, model } = command;
  // Seen first: candidates are recorded before anything can fail (but the bound on what a route keeps).
  const seen = newlySeen(state, command.candidates);
  const bounded = pastSeenBound(state, seen);
  if (bounded !== undefined) return bounded;
  const healthy = (host: string) => command.hosts.get(host)?.healthy === true;
  const placed = (host: string, from: string, reused: boolean, admission?: number, chooser?: string) =>
    record("RouteLeasePlaced", {
      fp,
      model,
      host,
      from,
      reason: from === "" ? "new" : "unhealthy",
      reused,
      ...seenField(seen),
      ...(admission === undefined ? {} : { admission }),
      ...(chooser === undefined ? {} : { chooser }),
    });
  const existing = state.leases.get(leaseKey(fp, model));

  // 1. Pinned route.
  if (state.pinned !== "") {
    if (!healthy(state.pinned)) return reject("PINNED_DOWN", `route ${state.route} is pinned to ${state.pinned}, which is not healthy`);
    if (existing !== undefined) return reuse(existing, state.pinned, seen, command, now, settings);
    return placed(state.pinned, "", false);
  }

  // 2. An existing lease for the key.
  let from = "";
  if (existing !== undefined) {
    if (healthy(existing.host)) return reuse(existing, existing.host, seen, command, now, settings);
    from = existing.host;
  }

  // 3. Inherit the host of the route's own lease.
  if (fp !== ROUTE_WIDE_FP) {
    const own = state.leases.get(leaseKey(ROUTE_WIDE_FP, model));
    if (own !== undefined && healthy(own.host)) return placed(own.host, from, true);
  }

  // 4. Choose among healthy, non-draining candidates that are not full.
  // A placement the chooser decided names it; pins and inherited hosts do not.
  const chosen = (host: string, admission?: number) => placed(host, from, false, admission, settings.chooser.name);
  const granted = command.admission;
  if (granted === undefined && settings.chooser === leastLoadedChooser) {
    // The default chooser in one pass over the candidates; the general path below answers the same, with more lookups.
    const host = leastLoadedOpen(command);
    if (host !== undefined) {
      if ((command.hosts.get(host)?.maxLeases ?? null) === null) return chosen(host);
      const needed: AdmissionNeeded = { admit: host, routeSeq: state.lastSeq };
      return replyOnly(needed);
    }
    // None open: the general path says whether every eligible candidate is full.
  }
  // A candidate given twice is harmless to either chooser (same load, same score), so no dedup here.
  const eligible: string[] = [];
  for (const h of command.candidates) {
    const health = command.hosts.get(h);
    if (health !== undefined && health.healthy && !health.draining) eligible.push(h);
  }
  // An admission is valid only as the route's very next event: a later one could overlap another admitter's count.
  if (granted !== undefined && granted.routeSeq === state.lastSeq && eligible.includes(granted.host)) {
    return chosen(granted.host, granted.seq);
  }
  const capOf = (h: string) => command.hosts.get(h)?.maxLeases ?? null;
  const isFull = (h: string) => {
    const cap = capOf(h);
    return command.full?.has(h) === true || (cap !== null && (command.loads.get(h) ?? 0) >= cap);
  };
  const open = eligible.some(isFull) ? eligible.filter((h) => !isFull(h)) : eligible;
  const host = settings.chooser.choose({ route: state.route, fp, model }, open, command.loads, command.hostLoads);
  if (host === undefined) {
    const where = `route ${state.route} (fp ${JSON.stringify(fp)}, model ${JSON.stringify(model)})`;
    if (eligible.length > 0) {
      const full = [...new Set(eligible)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      return reject("NO_HOST", `every healthy, non-draining candidate host for ${where} is full`, { full });
    }
    return reject("NO_HOST", `no healthy, non-draining candidate host for ${where}`);
  }
  if (capOf(host) !== null) {
    const needed: AdmissionNeeded = { admit: host, routeSeq: state.lastSeq };
    return replyOnly(needed);
  }
  return chosen(host);
}

/**
 * What {@link leastLoadedChooser} picks among the command's open candidates
 * (healthy, non-draining, not full), in one pass: the fewest active leases,
 * ties by the smallest name; undefined when none is open.
 */
function leastLoadedOpen(command: AcquireRoute): string | undefined {
  const { hosts, loads, full, order, candidates } = command;
  // A long list sent again (the same frozen array: see src/transport/id-list-tails.ts) walks the load order instead.
  if (order !== undefined && candidates.length >= REMEMBER_LISTS_FROM && Object.isFrozen(candidates)) {
    const walked = firstOpenInOrder(command, order, seenLists.members(candidates));
    if (walked !== TOO_FAR) return walked;
  }
  let best: string | undefined;
  let bestLoad = Infinity;
  for (const h of command.candidates) {
    const health = hosts.get(h);
    if (health === undefined || !health.healthy || health.draining) continue;
    const load = loads.get(h) ?? 0;
    if (load > bestLoad || (load === bestLoad && !(best !== undefined && h < best))) continue;
    const cap = health.maxLeases ?? null;
    if (full?.has(h) === true || (cap !== null && load >= cap)) continue;
    best = h;
    bestLoad = load;
  }
  return best;
}

/** Hosts of the load order a placement reads before looking at every candidate instead. */
const MAX_WALK = 64;
const TOO_FAR = Symbol("too far");

/**
 * The first open candidate in the load order (the least-loaded choice, as
 * the order holds every host of the command's table), undefined when none
 * is, or {@link TOO_FAR} after {@link MAX_WALK} hosts.
 */
function firstOpenInOrder(
  command: AcquireRoute,
  order: Iterable<LoadedHost>,
  members: ReadonlySet<string>,
): string | undefined | typeof TOO_FAR {
  let walked = 0;
  for (const { name } of order) {
    if (++walked > MAX_WALK) return TOO_FAR;
    if (!members.has(name)) continue;
    const health = command.hosts.get(name);
    if (health === undefined || !health.healthy || health.draining) continue;
    const cap = health.maxLeases ?? null;
    if (command.full?.has(name) === true || (cap !== null && (command.loads.get(name) ?? 0) >= cap)) continue;
    return name;
  }
  return undefined;
}

/**
 * A reuse answers `{host, reused: true}`. It records the last use only when
 * the recorded one is at least `routeIdleMs / 100` old, or when the command
 * has to record something anyway (new candidates, a requestId), so a hot
 * conversation does not write an event per request.
 */
function reuse(
  lease: RouteLease,
  host: string,
  seen: readonly string[],
  command: AcquireRoute,
  now: number,
  settings: RouteSettings,
): Decision<RouteEvent> {
  if (seen.length > 0 || command.recordReuse || now - lease.lastUsedAtMs >= touchEveryMs(settings)) {
    return record("RouteLeaseTouched", { fp: lease.fp, model: lease.model, ...seenField(seen) });
  }
  return replyOnly({ host, reused: true });
}

/** Lists at least this long have their seen check remembered (shorter ones cost less to check than to look up). */
const REMEMBER_LISTS_FROM = 32;
/** Long candidate lists known to lie within seen sets, and their hosts as sets for the load-order walk (a memo: the same answers, fewer lookups). */
const seenLists = new SeenLists();

/** The hosts of `hosts` not yet in the route's seen set, each once, in order (no allocation when all were seen: the usual case). */
function newlySeen(state: RouteState, hosts: readonly string[]): string[] {
  const known = hosts.length >= REMEMBER_LISTS_FROM ? seenLists.within(hosts) : undefined;
  if (known?.has(state.seen) === true) return [];
  let fresh: Set<string> | undefined;
  for (const h of hosts) if (!state.seen.has(h)) (fresh ??= new Set()).add(h);
  if (fresh === undefined) {
    known?.add(state.seen);
    return [];
  }
  return [...fresh];
}

function seenField(seen: readonly string[]): { seen?: string[] } {
  return seen.length === 0 ? {} : { seen: [...seen] };
}

function leaseRef(lease: RouteLease): { fp: string; model: string; host: string } {
  return { fp: lease.fp, model: lease.model, host: lease.host };
}
