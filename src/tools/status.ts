/**
 * `leasehold status`: a live view of a running service. Proxies (load and
 * cooldowns), hosts and the route leases on them come from the service's own
 * read endpoints (`proxy.list`, `host.list`, `route.snapshot`); the contract
 * has no list of locks, so locks are folded from the stream's lock subjects
 * with the lock projection and shown with their holder and time left.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { EventLog } from "../events/event-log.ts";
import type { Subjects } from "../contract/subjects.ts";
import type { ProxyView } from "../proxy/state.ts";
import type { RouteLeaseView } from "../route/state.ts";
import { ToolConnectionError } from "./errors.ts";
import { isNoResponders } from "../transport/no-responders.ts";
import { foldStream, replayView, type HostReplayView } from "./replay.ts";
import { holderCell, labelsText } from "./replay-render.ts";
import { cell, renderTable } from "./table.ts";
import { formatDuration, iso } from "./time.ts";
import { ERROR_MESSAGE_HEADER, ERROR_STATUS_HEADER } from "../contract/errors.ts";

/** A lock as status shows it. */
export interface LockStatus {
  readonly name: string;
  readonly state: "held" | "expired" | "free" | "corrupt";
  readonly owner: string | null;
  /** The principal that created the lease; absent when unknown. */
  readonly by?: string;
  readonly generation: number;
  readonly expiresAt: string | null;
  /** Milliseconds until the lease expires (held locks only). */
  readonly leftMs: number | null;
  /** Acquires waiting in the lock's queue. */
  readonly waiters: number;
}

/** A host as `host.list` shows it: the replay view plus the load it published (null when unknown). */
export interface HostStatus extends HostReplayView {
  readonly load?: number | null;
}

/** The live view. */
export interface ServiceStatus {
  readonly at: string;
  readonly prefix: string;
  readonly proxies: ProxyView[];
  readonly hosts: HostStatus[];
  readonly routeLeases: RouteLeaseView[];
  readonly locks: LockStatus[];
  /** Sessions live now, and how many locks they hold. */
  readonly sessions: { readonly live: number; readonly ended: number; readonly locks: number };
}

const encoder = new TextEncoder();

/** Sends one request to the service and returns its JSON reply; a missing service or an error reply is a {@link ToolConnectionError}. */
export async function requestService<T>(nc: NatsConnection, subjects: Subjects, kindOp: string, timeoutMs: number): Promise<T> {
  const [kind, op] = kindOp.split(".") as [string, string];
  const subject = subjects.command(kind, op);
  let reply;
  try {
    reply = await nc.request(subject, encoder.encode("{}"), { timeout: timeoutMs });
  } catch (e) {
    const why = isNoResponders(e)
      ? `no leasehold service listens on ${subject}`
      : `no leasehold service answered ${subject} within ${timeoutMs} ms`;
    throw new ToolConnectionError(
      `${why} (${(e as Error).message}); status needs a running service: start one with \`npx leasehold serve --prefix ${subjects.prefix}\``,
      { cause: e },
    );
  }
  const status = reply.headers?.get(ERROR_STATUS_HEADER);
  if (status)
    throw new ToolConnectionError(`the service answered ${subject} with ${status} ${reply.headers?.get(ERROR_MESSAGE_HEADER) ?? ""}`);
  return reply.json<T>();
}

/** Collects the live view: three read requests to the service, and the lock subjects of the stream folded at `now`. */
export async function collectStatus(
  nc: NatsConnection,
  log: EventLog,
  subjects: Subjects,
  now: () => number,
  timeoutMs = 5000,
): Promise<ServiceStatus> {
  const [proxies, hosts, snapshot] = await Promise.all([
    requestService<{ proxies: ProxyView[] }>(nc, subjects, "proxy.list", timeoutMs),
    requestService<{ hosts: HostStatus[] }>(nc, subjects, "host.list", timeoutMs),
    requestService<{ leases: RouteLeaseView[] }>(nc, subjects, "route.snapshot", timeoutMs),
  ]);
  const fold = await foldStream(log.readStream({ filter: subjects.eventsOfKind("lock") }), subjects);
  // The sessions the locks hang on (each actor folds apart, so the kinds may be read one after the other).
  for await (const m of log.readStream({ filter: subjects.eventsOfKind("session") })) fold.apply(m);
  const at = now();
  const view = replayView(fold, at, {});
  const live = (view.sessions ?? []).filter((s) => s.state === "live");
  const sessions = {
    live: live.length,
    ended: (view.sessions ?? []).length - live.length,
    locks: live.reduce((n, s) => n + s.locks.length, 0),
  };
  const locks = (view.locks ?? []).map((l): LockStatus => {
    const r = l.recorded;
    return {
      name: l.name,
      state: l.state,
      owner: r?.owner ?? null,
      ...(l.by === undefined ? {} : { by: l.by }),
      generation: l.generation,
      expiresAt: r?.expiresAt ?? null,
      leftMs: l.state === "held" && r !== null ? Date.parse(r.expiresAt) - at : null,
      waiters: l.waiters,
    };
  });
  return {
    at: iso(at),
    prefix: subjects.prefix,
    proxies: proxies.proxies,
    hosts: hosts.hosts,
    routeLeases: snapshot.leases,
    locks,
    sessions,
  };
}

const yesNo = (b: boolean) => (b ? "yes" : "no");

/** The live view as aligned tables. `allLocks` also lists free and expired locks (default: held and corrupt ones). */
export function renderStatus(status: ServiceStatus, allLocks = false): string[] {
  const at = Date.parse(status.at);
  const byHost = new Map<string, RouteLeaseView[]>();
  for (const l of status.routeLeases) byHost.set(l.host, [...(byHost.get(l.host) ?? []), l]);
  const shownLocks = status.locks.filter((l) => allLocks || l.state === "held" || l.state === "corrupt");
  const held = status.locks.filter((l) => l.state === "held").length;
  const hiddenLocks = status.locks.length - shownLocks.length;
  return [
    `leasehold status (prefix ${status.prefix}) at ${status.at}`,
    "",
    ...renderTable(
      `PROXIES (${status.proxies.length})`,
      ["PROXY", "LOAD", "HEALTHY", "LATENCY", "LABELS", "COOLDOWNS"],
      status.proxies.map((p) => [
        cell(p.proxy),
        `${p.active}/${p.maxLeases}`,
        yesNo(p.healthy),
        `${p.latencyMs}ms`,
        labelsText(p.labels),
        p.cooldowns
          .map((c) => `${c.target === "" ? "(global)" : cell(c.target)} ${formatDuration(Date.parse(c.untilAt) - at)} left`)
          .join(", ") || "-",
      ]),
    ),
    "",
    ...renderTable(
      `HOSTS (${status.hosts.length})`,
      ["HOST", "HEALTHY", "DRAINING", "LEASES", "MAX", "LOAD"],
      status.hosts.map((h) => [
        cell(h.host),
        yesNo(h.healthy),
        yesNo(h.draining),
        // A full host (at or over its cap) is marked: the chooser skips it.
        h.maxLeases !== null && h.maxLeases !== undefined && h.active >= h.maxLeases ? `${h.active} (full)` : String(h.active),
        h.maxLeases === null || h.maxLeases === undefined ? "-" : String(h.maxLeases),
        // The load the host last published (unknown: none lately, or a service before 1.2).
        h.load === null || h.load === undefined ? "-" : String(h.load),
      ]),
    ),
    "",
    ...renderTable(
      `ROUTE LEASES BY HOST (${status.routeLeases.length})`,
      ["HOST", "ROUTE", "FP", "MODEL", "IDLE"],
      [...byHost.keys()]
        .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
        .flatMap((host) =>
          byHost
            .get(host)!
            .map((l) => [cell(host), cell(l.route), cell(l.fp), cell(l.model), formatDuration(at - Date.parse(l.lastUsedAt))]),
        ),
    ),
    "",
    ...renderTable(
      `LOCKS (${held} held of ${status.locks.length}${hiddenLocks > 0 ? `; ${hiddenLocks} free or expired not shown, --all-locks lists them` : ""})`,
      ["LOCK", "STATE", "HOLDER", "GENERATION", "EXPIRES", "LEFT", "WAITERS"],
      shownLocks.map((l) => [
        cell(l.name),
        l.state,
        l.owner === null ? "-" : holderCell(l.owner, l.by),
        String(l.generation),
        l.expiresAt ?? "-",
        l.leftMs === null ? "-" : formatDuration(l.leftMs),
        String(l.waiters),
      ]),
    ),
    "",
    `SESSIONS: ${status.sessions.live} live holding ${status.sessions.locks} locks, ${status.sessions.ended} ended`,
  ];
}
