/**
 * `leasehold audit`: a streaming checker of every invariant docs/protocol.md puts
 * on the event stream. Each message is folded with the service's own
 * `evolve` (the fold is lenient: it must rebuild whatever was written), and
 * before that, checked against the state so far by rules that are strict
 * (they name whatever the contract forbids). Time is the event's own `at`;
 * "at that instant" for cross-actor rules (host health) means at that point
 * of the stream, which totally orders every actor's events.
 */
import {
  hostEventSchemas,
  isHostEvent,
  isLockEvent,
  isProxyEvent,
  isRouteEvent,
  isUnparsable,
  lockEventSchemas,
  proxyEventSchemas,
  routeEventSchemas,
  type EventEnvelope,
  type HistoryEntry,
  type HostEvent,
  type LockEvent,
  type ProxyEvent,
  type RouteEvent,
  type StoredMessage,
  instantMs,
} from "../events/index.ts";
import { type ActorKind, type Subjects } from "../contract/subjects.ts";
import {
  activeLeases,
  compareCodeUnits,
  countLeaseMoves,
  inCooldown,
  leaseKey,
  pruneProxy,
  resolvableLease,
  type HostState,
  type LockState,
  type ProxyState,
  type RouteState,
} from "../projections/index.ts";
import { queueAt } from "../projections/lock-queue.ts";
import { StreamFold, type ActorRef } from "./stream-fold.ts";
import { cell } from "./table.ts";
import { iso } from "./time.ts";
import type { StreamSource } from "./stream-reader.ts";

/** Every rule the audit checks, by its stable id, with what it forbids. */
export const AUDIT_RULES = {
  "event-parses": "every message is UTF-8 JSON of a known event type whose data has the fields the contract requires",
  envelope:
    "every event carries the envelope `{type, v: 1, at, kind, id, requestId?, data}`, sits on `<prefix>.events.<kind>.<token>` with kind and id matching its subject, and has a type of that kind",
  "subject-sequence": "stream sequences rise strictly along each subject",
  "subject-at-decreases": "an event's `at` is never earlier than the previous event's `at` on the same subject",
  "proxy-over-capacity": "a grant never leaves a proxy with more unexpired leases than its maxLeases (at the grant's instant)",
  "proxy-grant-in-cooldown": "no grant while a cooldown applies to it (the global one, or one for the grant's target)",
  "proxy-grant-unregistered": "no grant on a proxy that is not registered (never, or removed)",
  "proxy-grant-unhealthy": "no grant on a proxy registered as unhealthy",
  "proxy-lease-id-reused": "a lease id is granted once (across all proxies, while it still resolves)",
  "proxy-report-unknown-lease":
    "a cooldown is started only by a report on a lease that resolves on that proxy: granted there, not released, not expired longer than the retention (`--cooldown-ms`) ago",
  "proxy-release-unknown-lease": "a release is recorded only for a lease that resolves on that proxy",
  "route-key-on-two-hosts":
    "a conversation key (route, fp, model) is on at most one host: a placement of a key that has a lease names that lease's host as `from`",
  "route-placed-on-unhealthy-host":
    "acquire never places a lease (new, replacement, pin or inherited) on a host that is not healthy at that point of the stream",
  "route-new-on-draining-host": "acquire never newly chooses a draining host (the route's pin and inherited placements may be draining)",
  "route-placed-off-pin": "on a pinned route, acquire places leases only on the pin",
  "route-new-on-full-host":
    "acquire never newly chooses a full host: a new lease on a capped host names its host's admission for that key and is the route's next event after the admission's routeSeq; without one, the host's active leases are under its maxLeases",
  "host-admitted-when-full":
    "a host admits a new lease only while its active route leases plus its admissions still open (their route not yet past their routeSeq) are under its maxLeases",
  "route-unknown-lease":
    "a touch, expiry, release or displacement names a lease the route has, on the host it is on (and a placement's `from` is empty when the key had none)",
  "lock-two-holders": "a lock is never acquired while its lease is unexpired (at the acquisition's instant): never two unexpired holders",
  "lock-generation-not-plus-one": "each acquisition's generation is exactly one more than the highest before it",
  "lock-generation-repeated": "no acquisition reuses a generation already granted (or carried by a reset)",
  "lock-renew-not-holder": "a renewal applies to the current lease: same owner and generation (what the current etag stands for)",
  "lock-release-not-holder": "a release applies to the current lease: same owner and generation",
  "lock-previous-owner-mismatch":
    "an acquisition's previousOwner is the owner of the (expired) lease it replaces, or empty when the lock was free",
  "lock-lease-beyond-max-ttl":
    "no lease ends more than maxTtlMs (`--max-ttl-ms`) after the event that wrote it (the service would answer CORRUPT)",
  "lock-queue-order":
    "first come, first served: while the head of a lock's wait queue is in its claim window, the lock is granted to that waiter only (and a grant to a waiter names a live place in the queue)",
} as const;

/** The id of an audit rule. */
export type AuditRule = keyof typeof AUDIT_RULES;

/** One broken rule. */
export interface Violation {
  readonly seq: number;
  readonly subject: string;
  /** The event's `at` when it has one, else the stream's stored time. */
  readonly at: string;
  /** The actor of the subject (null when the subject is not one leasehold writes). */
  readonly actor: ActorRef | null;
  readonly rule: AuditRule;
  readonly message: string;
}

/** Settings of an audit. */
export interface AuditOptions {
  /** How long an expired proxy lease still resolves for report (the service's --cooldown-ms). */
  readonly cooldownMs: number;
  /** The service's --max-ttl-ms. */
  readonly maxTtlMs: number;
  /** Report violations only from this sequence on (earlier messages are folded silently, so the state is right). */
  readonly fromSeq?: number | undefined;
  /** ... or from the first message stored at or after this instant. */
  readonly fromTime?: number | undefined;
  /** Stop after this sequence. */
  readonly toSeq?: number | undefined;
  /** Stop after the last message stored at or before this instant. */
  readonly toTime?: number | undefined;
  /** Called for each violation as it is found. */
  readonly onViolation?: (violation: Violation) => void;
  /** Called every `progressEvery` messages. */
  readonly onProgress?: (progress: AuditProgress) => void;
  readonly progressEvery?: number;
}

/** How far an audit has got. */
export interface AuditProgress {
  /** Messages read so far. */
  readonly read: number;
  readonly seq: number;
  readonly violations: number;
}

/** What an audit found. */
export interface AuditSummary {
  /** Messages read (folded). */
  readonly read: number;
  /** Messages checked (read within --from/--to). */
  readonly checked: number;
  /** First and last sequence checked (0 when none). */
  readonly firstSeq: number;
  readonly lastSeq: number;
  /** Actors with history, by kind. */
  readonly actors: Readonly<Record<ActorKind, number>>;
  /** Violations by rule (rules with none absent). */
  readonly byRule: Readonly<Partial<Record<AuditRule, number>>>;
  readonly violations: number;
  readonly elapsedMs: number;
}

const TYPES_OF_KIND: Readonly<Record<ActorKind, ReadonlySet<string>>> = {
  lock: new Set(Object.keys(lockEventSchemas)),
  proxy: new Set(Object.keys(proxyEventSchemas)),
  host: new Set(Object.keys(hostEventSchemas)),
  route: new Set(Object.keys(routeEventSchemas)),
};

/** A reported rule break, before it is placed at a sequence. */
type Finding = readonly [AuditRule, string];

/** Checks one message at a time; feed it the stream in order. */
export class Auditor {
  readonly fold: StreamFold;
  /** Per subject: the highest sequence and the latest `at` (epoch ms; NaN before any event) seen on it. */
  private readonly subjectMarks = new Map<string, { lastSeq: number; lastAtMs: number }>();
  /** Lease id -> proxy and expiry, for ids granted anywhere that may still resolve. */
  private readonly leaseIds = new Map<string, { proxy: string; expiresAtMs: number }>();
  private pruneIdsAt = 1024;
  /** Active route leases per host, all routes, as of the message being checked. */
  private readonly activeOnHost = new Map<string, number>();
  /** Host admissions not yet used by a placement, by stream sequence. */
  private readonly admissions = new Map<number, { host: string; route: string; fp: string; model: string; routeSeq: number }>();
  private readonly byRule = new Map<AuditRule, number>();
  private violations = 0;
  private read = 0;
  private checked = 0;
  private firstChecked = 0;
  private lastChecked = 0;
  private reporting: boolean;
  private readonly started = Date.now();

  constructor(
    subjects: Subjects,
    private readonly options: AuditOptions,
  ) {
    this.fold = new StreamFold(subjects);
    this.reporting = options.fromSeq === undefined && options.fromTime === undefined;
  }

  /** Checks one message against the state so far, then folds it. */
  check(message: StoredMessage): void {
    this.read++;
    if (!this.reporting) {
      const { fromSeq, fromTime } = this.options;
      this.reporting = (fromSeq !== undefined && message.seq >= fromSeq) || (fromTime !== undefined && message.time >= fromTime);
    }
    const findings: Finding[] = [];
    // One record per subject, updated in place: one map lookup per message.
    let marks = this.subjectMarks.get(message.subject);
    if (marks === undefined) this.subjectMarks.set(message.subject, (marks = { lastSeq: 0, lastAtMs: Number.NaN }));
    const lastSeq = marks.lastSeq;
    if (message.seq <= lastSeq) findings.push(["subject-sequence", `sequence ${message.seq} follows ${lastSeq} on ${message.subject}`]);
    marks.lastSeq = Math.max(lastSeq, message.seq);

    const actor = this.fold.actorOf(message.subject);
    // States are immutable: what the actor was before this message stays valid after the fold applies it.
    const before = actor === null ? undefined : this.fold.get(actor.kind, actor.id);
    const entry = this.fold.applyTo(message, actor);
    let atMs = message.time;
    if (actor === null) {
      findings.push(["envelope", `subject ${message.subject} is not ${this.fold.subjects.prefix}.events.<kind>.<token>`]);
    }
    if (isUnparsable(entry)) {
      findings.push([entry.reason.startsWith("bad envelope") ? "envelope" : "event-parses", entry.reason]);
    } else if (actor !== null) {
      const event = entry.event;
      atMs = instantMs(event.at);
      const mismatch = envelopeMismatch(event, actor);
      if (mismatch !== null) {
        findings.push(["envelope", mismatch]);
      } else {
        const lastAt = marks.lastAtMs;
        if (atMs < lastAt) {
          findings.push(["subject-at-decreases", `at ${event.at} is before ${iso(lastAt)}, the previous event's on this subject`]);
        }
        // NaN (nothing yet) never compares: the first event's instant is taken as it is.
        marks.lastAtMs = atMs < lastAt ? lastAt : atMs;
        switch (actor.kind) {
          case "lock":
            if (isLockEvent(event)) this.checkLock(event, before as LockState, atMs, findings);
            break;
          case "proxy":
            if (isProxyEvent(event)) this.checkProxy(event, actor.id, before as ProxyState, atMs, findings);
            break;
          case "route":
            if (isRouteEvent(event)) this.checkRoute(event, actor.id, before as RouteState, findings);
            break;
          case "host":
            if (isHostEvent(event)) this.checkHost(event, actor.id, before as HostState, message.seq, findings);
            break;
        }
      }
    }
    if (actor?.kind === "route") this.countLeases(before as RouteState, this.fold.get("route", actor.id), entry);
    if (!this.reporting) return;
    this.checked++;
    if (this.firstChecked === 0) this.firstChecked = message.seq;
    this.lastChecked = message.seq;
    for (const [rule, text] of findings) {
      this.violations++;
      this.byRule.set(rule, (this.byRule.get(rule) ?? 0) + 1);
      this.options.onViolation?.({ seq: message.seq, subject: message.subject, at: iso(atMs), actor, rule, message: text });
    }
  }

  /** Violations found so far. */
  get violationsFound(): number {
    return this.violations;
  }

  /** Messages read so far. */
  get messagesRead(): number {
    return this.read;
  }

  /** The summary of everything checked so far. */
  summary(): AuditSummary {
    const { states } = this.fold;
    return {
      read: this.read,
      checked: this.checked,
      firstSeq: this.firstChecked,
      lastSeq: this.lastChecked,
      actors: { proxy: states.proxy.size, host: states.host.size, route: states.route.size, lock: states.lock.size },
      byRule: Object.fromEntries([...this.byRule].sort(([a], [b]) => compareCodeUnits(a, b))),
      violations: this.violations,
      elapsedMs: Date.now() - this.started,
    };
  }

  private checkLock(event: LockEvent, before: LockState, atMs: number, findings: Finding[]): void {
    const held = before.lease;
    switch (event.type) {
      case "LockAcquired": {
        const d = event.data;
        const queue = queueAt(before, atMs);
        if (queue.head !== null && queue.headMayClaim && d.waiterSeq !== queue.head.seq) {
          findings.push([
            "lock-queue-order",
            `acquired by ${cell(d.owner)} while waiter ${cell(queue.head.owner)} (queued at sequence ${queue.head.seq}) was in its claim window until ${iso(queue.headLeavesAtMs)}`,
          ]);
        } else if (d.waiterSeq !== undefined && !queue.live.some((w) => w.seq === d.waiterSeq)) {
          findings.push(["lock-queue-order", `granted to the place queued at sequence ${d.waiterSeq}, which is not in the queue`]);
        }
        if (held !== null && held.expiresAtMs > atMs) {
          findings.push([
            "lock-two-holders",
            `acquired by ${cell(d.owner)} (generation ${d.generation}) while ${cell(held.owner)} holds generation ${held.generation} until ${held.expiresAt}`,
          ]);
        }
        if (d.generation <= before.generation) {
          findings.push(["lock-generation-repeated", `generation ${d.generation} granted again (highest so far ${before.generation})`]);
        } else if (d.generation !== before.generation + 1) {
          findings.push([
            "lock-generation-not-plus-one",
            `generation ${d.generation} after ${before.generation} (expected ${before.generation + 1})`,
          ]);
        }
        const expected = held?.owner ?? "";
        if (d.previousOwner !== expected) {
          findings.push([
            "lock-previous-owner-mismatch",
            `previousOwner ${JSON.stringify(d.previousOwner)}, but ${held === null ? "the lock was free" : `the lease it replaces is ${JSON.stringify(held.owner)}'s`}`,
          ]);
        }
        this.checkTtl(event.type, d.expiresAt, atMs, findings);
        break;
      }
      case "LockRenewed": {
        const d = event.data;
        if (held === null || held.owner !== d.owner || held.generation !== d.generation) {
          findings.push(["lock-renew-not-holder", `renewed by ${cell(d.owner)} at generation ${d.generation}, but ${describeLease(held)}`]);
        }
        this.checkTtl(event.type, d.expiresAt, atMs, findings);
        break;
      }
      case "LockReleased": {
        const d = event.data;
        if (held === null || held.owner !== d.owner || held.generation !== d.generation) {
          findings.push([
            "lock-release-not-holder",
            `released by ${cell(d.owner)} at generation ${d.generation}, but ${describeLease(held)}`,
          ]);
        }
        break;
      }
      case "LockReset":
      case "LockWaiterQueued":
        break;
    }
  }

  private checkTtl(type: string, expiresAt: string, atMs: number, findings: Finding[]): void {
    const ahead = instantMs(expiresAt) - atMs;
    const { maxTtlMs } = this.options;
    if (ahead > maxTtlMs)
      findings.push(["lock-lease-beyond-max-ttl", `${type} writes a lease ending ${ahead} ms after the event, above maxTtlMs ${maxTtlMs}`]);
  }

  private checkProxy(event: ProxyEvent, name: string, before: ProxyState, atMs: number, findings: Finding[]): void {
    const retentionMs = this.options.cooldownMs;
    switch (event.type) {
      case "ProxyLeaseGranted": {
        const d = event.data;
        const reg = before.registration;
        if (reg === null) {
          findings.push(["proxy-grant-unregistered", `lease ${d.leaseId} granted on a proxy that is not registered`]);
        } else {
          if (!reg.healthy) findings.push(["proxy-grant-unhealthy", `lease ${d.leaseId} granted on a proxy registered as unhealthy`]);
          if (inCooldown(before, d.target, atMs)) {
            const global = before.cooldowns.get("");
            const cooldown =
              global !== undefined && atMs < global.untilMs
                ? { what: "the global cooldown", until: global.untilAt }
                : { what: `the cooldown for ${JSON.stringify(d.target)}`, until: before.cooldowns.get(d.target)!.untilAt };
            findings.push([
              "proxy-grant-in-cooldown",
              `lease ${d.leaseId} for target ${JSON.stringify(d.target)} granted during ${cooldown.what} (until ${cooldown.until})`,
            ]);
          }
          const replaced = before.leases.get(d.leaseId);
          const active = activeLeases(before, atMs) - (replaced !== undefined && atMs < replaced.expiresAtMs ? 1 : 0) + 1;
          if (active > reg.maxLeases) {
            findings.push(["proxy-over-capacity", `lease ${d.leaseId} makes ${active} unexpired leases, above maxLeases ${reg.maxLeases}`]);
          }
        }
        const earlier = this.leaseIds.get(d.leaseId);
        if (earlier !== undefined && atMs <= earlier.expiresAtMs + retentionMs) {
          findings.push(["proxy-lease-id-reused", `lease id ${d.leaseId} was already granted on proxy ${cell(earlier.proxy)}`]);
        }
        this.leaseIds.set(d.leaseId, { proxy: name, expiresAtMs: instantMs(d.expiresAt) });
        this.prune(name, atMs);
        break;
      }
      case "ProxyCooldownStarted":
        if (resolvableLease(before, event.data.leaseId, atMs, retentionMs) === undefined) {
          findings.push([
            "proxy-report-unknown-lease",
            `cooldown for target ${JSON.stringify(event.data.target)} started by a report on lease ${event.data.leaseId}, ${this.whyUnresolved(event.data.leaseId, name, before, atMs)}`,
          ]);
        }
        break;
      case "ProxyLeaseReleased":
        if (resolvableLease(before, event.data.leaseId, atMs, retentionMs) === undefined) {
          findings.push([
            "proxy-release-unknown-lease",
            `release of lease ${event.data.leaseId}, ${this.whyUnresolved(event.data.leaseId, name, before, atMs)}`,
          ]);
        }
        break;
      default:
        break;
    }
  }

  /** Why a lease id does not resolve on proxy `name` at `atMs`, in words. */
  private whyUnresolved(leaseId: string, name: string, state: ProxyState, atMs: number): string {
    const lease = state.leases.get(leaseId);
    if (lease !== undefined) return `which expired at ${lease.expiresAt}, more than the retention (${this.options.cooldownMs} ms) before`;
    const known = this.leaseIds.get(leaseId);
    if (known === undefined) return "which was never granted (or is past retention)";
    if (known.proxy !== name) return `which was granted on proxy ${cell(known.proxy)}, not this one`;
    return atMs > known.expiresAtMs + this.options.cooldownMs ? "which is past retention" : "which was released";
  }

  /** Drops leases past retention from one proxy's state and from the id index: they can never matter again. */
  private prune(name: string, atMs: number): void {
    const retentionMs = this.options.cooldownMs;
    this.fold.set("proxy", name, pruneProxy(this.fold.get("proxy", name), atMs, retentionMs));
    // The id index is scanned only when it has doubled since the last scan.
    if (this.leaseIds.size > this.pruneIdsAt) {
      for (const [id, lease] of this.leaseIds) if (atMs > lease.expiresAtMs + retentionMs) this.leaseIds.delete(id);
      this.pruneIdsAt = Math.max(1024, this.leaseIds.size * 2);
    }
  }

  /** Keeps {@link Auditor.activeOnHost} current: the leases one route message added and removed. */
  private countLeases(before: RouteState, after: RouteState, entry: HistoryEntry): void {
    countLeaseMoves(before.leases, after.leases, entry, (host, delta) => this.addActive(host, delta));
  }

  private addActive(host: string, delta: number): void {
    this.activeOnHost.set(host, (this.activeOnHost.get(host) ?? 0) + delta);
  }

  /** Admissions of `host` whose route has not moved past their place: they may still become leases. */
  private openAdmissions(state: HostState): number {
    let open = 0;
    for (const a of state.admissions) if (this.fold.get("route", a.route).lastSeq <= a.routeSeq) open++;
    return open;
  }

  private checkHost(event: HostEvent, name: string, before: HostState, seq: number, findings: Finding[]): void {
    if (event.type !== "HostLeaseAdmitted") return;
    const d = event.data;
    this.admissions.set(seq, { host: name, route: d.route, fp: d.fp, model: d.model, routeSeq: d.routeSeq });
    if (before.maxLeases === null) return;
    const active = this.activeOnHost.get(name) ?? 0;
    const open = this.openAdmissions(before);
    if (active + open >= before.maxLeases) {
      findings.push([
        "host-admitted-when-full",
        `admitted ${keyText(d.route, d.fp, d.model)} with ${active} active leases and ${open} open admissions, maxLeases ${before.maxLeases}`,
      ]);
    }
  }

  /** A new lease chosen onto a capped host: admitted for it, in its place, or at least under the cap. */
  private checkCapacity(
    d: { fp: string; model: string; host: string; admission?: number | undefined },
    route: string,
    before: RouteState,
    findings: Finding[],
  ): void {
    const cap = this.fold.states.host.get(d.host)?.maxLeases ?? null;
    const key = () => keyText(route, d.fp, d.model);
    if (d.admission !== undefined) {
      const a = this.admissions.get(d.admission);
      this.admissions.delete(d.admission);
      if (a === undefined || a.host !== d.host || a.route !== route || a.fp !== d.fp || a.model !== d.model) {
        findings.push([
          "route-new-on-full-host",
          `${key()} placed on ${cell(d.host)} naming admission ${d.admission}, which is not that host's admission of this key`,
        ]);
      } else if (before.lastSeq !== a.routeSeq) {
        findings.push([
          "route-new-on-full-host",
          `${key()} placed on ${cell(d.host)} with admission ${d.admission} for the route's event after ${a.routeSeq}, but the route was at ${before.lastSeq}`,
        ]);
      }
      return;
    }
    const active = this.activeOnHost.get(d.host) ?? 0;
    if (cap !== null && active >= cap) {
      findings.push([
        "route-new-on-full-host",
        `${key()} newly placed on ${cell(d.host)}, which is full (${active} active leases, maxLeases ${cap})`,
      ]);
    }
  }

  private checkRoute(event: RouteEvent, route: string, before: RouteState, findings: Finding[]): void {
    const hosts = this.fold.states.host;
    switch (event.type) {
      case "RouteLeasePlaced": {
        const d = event.data;
        const existing = before.leases.get(leaseKey(d.fp, d.model));
        // The key's text is built only for a finding: most placements have none.
        const key = () => keyText(route, d.fp, d.model);
        if (existing !== undefined && d.from !== existing.host) {
          findings.push([
            "route-key-on-two-hosts",
            `${key()} placed on ${cell(d.host)} from ${JSON.stringify(d.from)} while its lease is on ${cell(existing.host)}`,
          ]);
        } else if (existing === undefined && d.from !== "") {
          findings.push(["route-unknown-lease", `${key()} placed from ${cell(d.from)}, but the key had no lease`]);
        }
        // An operator's move: no health check, as the contract says.
        if (d.reason === "ctx") break;
        const host = hosts.get(d.host);
        if (host?.healthy !== true) {
          const why = host?.set === true ? "unhealthy" : "never set (unhealthy)";
          findings.push([
            "route-placed-on-unhealthy-host",
            `${key()} placed (${d.reason}${d.reused ? ", inherited" : ""}) on ${cell(d.host)}, which is ${why}`,
          ]);
        }
        if (before.pinned !== "" && d.host !== before.pinned) {
          findings.push(["route-placed-off-pin", `${key()} placed on ${cell(d.host)} while the route is pinned to ${cell(before.pinned)}`]);
        }
        if (host?.draining === true && !d.reused && d.host !== before.pinned) {
          findings.push(["route-new-on-draining-host", `${key()} newly placed on ${cell(d.host)}, which is draining`]);
        }
        // Chosen (not a pin, not inherited): capacity applies.
        if (!d.reused && before.pinned === "") this.checkCapacity(d, route, before, findings);
        break;
      }
      case "RouteLeaseTouched":
        if (!before.leases.has(leaseKey(event.data.fp, event.data.model))) {
          findings.push(["route-unknown-lease", `touch of ${keyText(route, event.data.fp, event.data.model)}, which has no lease`]);
        }
        break;
      case "RouteLeaseExpired":
        checkRefs(before, route, "expiry", [event.data], findings);
        break;
      case "RoutePinned":
        checkRefs(before, route, "displacement", event.data.displaced, findings);
        break;
      case "RouteReleased":
        checkRefs(before, route, "release", event.data.released, findings);
        break;
      default:
        break;
    }
  }
}

/** Why an event's envelope does not fit its subject, or null when it does. */
function envelopeMismatch(event: EventEnvelope, actor: ActorRef): string | null {
  if (event.kind !== actor.kind) return `kind ${JSON.stringify(event.kind)} on a ${actor.kind} subject`;
  if (event.id !== actor.id) return `id ${JSON.stringify(event.id)} on the subject of ${actor.kind} ${JSON.stringify(actor.id)}`;
  if (!TYPES_OF_KIND[actor.kind].has(event.type)) return `${event.type} is not a ${actor.kind} event`;
  return null;
}

function describeLease(held: LockState["lease"]): string {
  return held === null ? "the lock has no lease" : `the lease is ${cell(held.owner)}'s at generation ${held.generation}`;
}

function keyText(route: string, fp: string, model: string): string {
  return `key (${cell(route)}, ${JSON.stringify(fp)}, ${JSON.stringify(model)})`;
}

/** Each `{fp, model, host}` an event names must be a lease the route has, on that host. */
function checkRefs(
  state: RouteState,
  route: string,
  what: string,
  refs: readonly { fp: string; model: string; host: string }[],
  findings: Finding[],
): void {
  for (const ref of refs) {
    const lease = state.leases.get(leaseKey(ref.fp, ref.model));
    if (lease === undefined)
      findings.push(["route-unknown-lease", `${what} of ${keyText(route, ref.fp, ref.model)} on ${cell(ref.host)}, which has no lease`]);
    else if (lease.host !== ref.host)
      findings.push([
        "route-unknown-lease",
        `${what} of ${keyText(route, ref.fp, ref.model)} on ${cell(ref.host)}, but its lease is on ${cell(lease.host)}`,
      ]);
  }
}

/** Audits `messages` (the stream from its start, in order) within the options' range. */
export async function auditStream(
  messages: AsyncIterable<StoredMessage>,
  subjects: Subjects,
  options: AuditOptions,
): Promise<AuditSummary> {
  const auditor = new Auditor(subjects, options);
  const every = options.progressEvery ?? 10_000;
  for await (const m of messages) {
    if ((options.toSeq !== undefined && m.seq > options.toSeq) || (options.toTime !== undefined && m.time > options.toTime)) break;
    auditor.check(m);
    if (options.onProgress !== undefined && auditor.messagesRead % every === 0) {
      options.onProgress({ read: auditor.messagesRead, seq: m.seq, violations: auditor.violationsFound });
    }
  }
  return auditor.summary();
}

/**
 * Audits the stream read from `source` (the tools' fast path: no per-message
 * promise) within the options' range; `onMessage` sees each message checked
 * (progress).
 */
export async function auditSource(
  source: StreamSource,
  subjects: Subjects,
  options: AuditOptions,
  onMessage?: (message: StoredMessage) => void,
): Promise<AuditSummary> {
  const auditor = new Auditor(subjects, options);
  const { toTime } = options;
  const reportProgress = progressReporter(auditor, options.progressEvery, options.onProgress);
  await source.read({ toSeq: options.toSeq }, (m) => {
    if (toTime !== undefined && m.time > toTime) return false;
    auditor.check(m);
    onMessage?.(m);
    reportProgress(m);
    return true;
  });
  return auditor.summary();
}

/**
 * Called after each message `auditor` checked: tells `onProgress` every
 * `every` messages (default 10,000). For {@link auditSource} and the tools'
 * fold worker alike.
 */
export function progressReporter(
  auditor: Auditor,
  every = 10_000,
  onProgress: ((progress: AuditProgress) => void) | undefined,
): (m: StoredMessage) => void {
  if (onProgress === undefined) return () => undefined;
  return (m) => {
    if (auditor.messagesRead % every === 0) onProgress({ read: auditor.messagesRead, seq: m.seq, violations: auditor.violationsFound });
  };
}
