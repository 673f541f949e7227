/**
 * The chaos run's verdict: checks over what the clients recorded and what the
 * event stream holds. Each check counts its violations (0 when it held) and
 * keeps a few examples for the report.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { chaosLogDir } from "./log-dir.ts";
import { Auditor, type AuditRule } from "../../src/tools/audit.ts";
import {
  checkLinearizable,
  lockModel,
  type LockInput,
  type LockLeaseView,
  type LockOutput,
  type Operation,
} from "../../src/tools/linearizability.ts";
import type { OpRecord, Outage } from "./history.ts";

/** Every check of a chaos run, with what it forbids. */
export const CHAOS_CHECKS = {
  "acknowledged-command-lost": "a command answered with success that must append has no event with its requestId in the stream",
  "event-without-cause":
    "an event carries a requestId no client sent, or carries none and is not a sweep's (idle route expiry, coalesced touch)",
  "duplicate-event-for-requestId": "more than one event carries the same requestId",
  "unavailable-yet-recorded":
    "an operation every attempt of which was answered UNAVAILABLE (or found no responder) has an event with its requestId in the stream, though UNAVAILABLE says nothing was changed",
  "proxy-cap-exceeded": "a grant left a proxy with more unexpired leases than its maxLeases (audit)",
  "proxy-cooldown-broken": "a grant during a cooldown that applies to it (audit)",
  "two-live-lock-holders": "a lock acquired while its lease was unexpired (audit)",
  "lock-history-not-linearizable":
    "a lock's recorded invoke/return history has no linearization under the lock model (or the search could not decide)",
  "route-key-on-two-hosts": "a conversation key placed on two hosts (audit), or acquire answers naming two hosts for one key (clients)",
  "stream-audit": "any other rule of `leasehold audit` broken",
  "request-unanswered": "an operation whose outcome the client never learned before its deadline (retries by requestId included)",
  "attempt-timed-out-outside-faults":
    "a request sent outside every fault window (a kill until 5 s after its recovery) that got no reply at all within its deadline: a service must answer, if only UNAVAILABLE, rather than hang",
  "sigterm-exit": "an instance that did not exit 0 within 10 s of SIGTERM",
  "fresh-instance-disagrees": "a fresh instance started after the run answers a read differently from the survivor",
  "overlapping-holds":
    "two clients held one lock at once as clients with true clocks see it: each from the answer granting or renewing its lease until that lease's expiresAt (less the holder's margin) or until its release was sent",
  "minority-answer-during-partition":
    "an instance cut off with a minority of the nats-servers answered a request sent during the partition, once the cut-off leader's lease ran out, with something other than UNAVAILABLE or a read",
  "minority-not-served-after-heal": "the instance on the minority side did not grant a lock within 5 s of the partition's heal",
} as const;

/** The id of a chaos check. */
export type ChaosCheck = keyof typeof CHAOS_CHECKS;

/** Violations by check (every check present) and a few examples of each. */
export interface Verdict {
  readonly violations: Record<ChaosCheck, number>;
  readonly examples: Partial<Record<ChaosCheck, string[]>>;
  /** Lock names whose linearizability search ran out of budget (counted as violations too). */
  readonly undecidedLocks: number;
  /** Lock operations the linearizability check covered. */
  readonly lockOperations: number;
}

/** Collects counts and examples. */
export class VerdictBuilder {
  private readonly counts = Object.fromEntries(Object.keys(CHAOS_CHECKS).map((k) => [k, 0])) as Record<ChaosCheck, number>;
  private readonly examples: Partial<Record<ChaosCheck, string[]>> = {};
  undecidedLocks = 0;
  lockOperations = 0;

  add(check: ChaosCheck, example: string, count = 1): void {
    this.counts[check] += count;
    const list = (this.examples[check] ??= []);
    if (list.length < 5) list.push(example);
  }

  build(): Verdict {
    return {
      violations: { ...this.counts },
      examples: this.examples,
      undecidedLocks: this.undecidedLocks,
      lockOperations: this.lockOperations,
    };
  }
}

/** Settings the stream checks need (the service's flags). */
export interface StreamCheckSettings {
  readonly prefix: string;
  readonly cooldownMs: number;
  readonly maxTtlMs: number;
}

const AUDIT_TO_CHECK: Partial<Record<AuditRule, ChaosCheck>> = {
  "proxy-over-capacity": "proxy-cap-exceeded",
  "proxy-grant-in-cooldown": "proxy-cooldown-broken",
  "lock-two-holders": "two-live-lock-holders",
  "route-key-on-two-hosts": "route-key-on-two-hosts",
};

/** Event types a sweep (or a coalesced touch) writes without a request. */
const CAUSELESS_TYPES = new Set(["RouteLeaseExpired", "RouteLeaseTouched"]);

/** Runs every check that needs only the records and the stream. */
export function checkRun(
  records: readonly OpRecord[],
  messages: readonly StoredMessage[],
  settings: StreamCheckSettings,
  verdict: VerdictBuilder,
): void {
  checkStream(records, messages, settings, verdict);
  const storedAt = storedAtByRequestId(messages);
  const failed = checkLocks(records, storedAt, verdict);
  const dumpDir = chaosLogDir();
  if (dumpDir !== undefined) dumpLocks(dumpDir, failed, records, messages, settings.prefix);
  checkRouteAnswers(records, verdict);
  for (const r of records) {
    if (neverReceived(r) && storedAt.has(r.requestId)) {
      const answers = r.attempts.map((a) => (a.message === undefined ? a.outcome : `${a.outcome}: ${a.message}`)).join(" | ");
      verdict.add("unavailable-yet-recorded", `${r.client} ${r.command} ${r.requestId}: ${answers}`);
    }
  }
  for (const r of records) {
    if (r.result.status === "unknown" && !neverReceived(r)) {
      verdict.add(
        "request-unanswered",
        `${r.client} ${r.command} ${JSON.stringify(r.body)}: ${r.attempts.map((a) => a.outcome).join(",")}`,
      );
    }
  }
}

/** True when no attempt of the operation can have reached a service that acted on it (every one refused before or without acting). */
function neverReceived(r: OpRecord): boolean {
  return r.attempts.length > 0 && r.attempts.every((a) => a.outcome === "unavailable" || a.outcome === "no-responders");
}

function checkStream(
  records: readonly OpRecord[],
  messages: readonly StoredMessage[],
  settings: StreamCheckSettings,
  verdict: VerdictBuilder,
): void {
  const auditor = new Auditor(new Subjects(settings.prefix), {
    cooldownMs: settings.cooldownMs,
    maxTtlMs: settings.maxTtlMs,
    onViolation: (v) => verdict.add(AUDIT_TO_CHECK[v.rule] ?? "stream-audit", `seq ${v.seq} ${v.subject}: ${v.rule}: ${v.message}`),
  });
  const sent = new Set(records.map((r) => r.requestId));
  const eventsOf = new Map<string, string[]>();
  const messagesOf = new Map<string, StoredMessage[]>();
  const decoder = new TextDecoder();
  for (const m of messages) {
    auditor.check(m);
    let event: { type?: string; requestId?: string };
    try {
      event = JSON.parse(decoder.decode(m.payload)) as typeof event;
    } catch {
      continue; // the audit names it
    }
    if (event.requestId === undefined) {
      if (!CAUSELESS_TYPES.has(event.type ?? ""))
        verdict.add("event-without-cause", `seq ${m.seq} ${event.type} on ${m.subject} carries no requestId`);
      continue;
    }
    if (!sent.has(event.requestId))
      verdict.add("event-without-cause", `seq ${m.seq} ${event.type}: requestId ${event.requestId} was never sent`);
    const described = `${m.seq} ${event.type} on ${m.subject} at ${new Date(m.time).toISOString()} msg id ${m.msgId ?? "none"}`;
    const list = eventsOf.get(event.requestId);
    if (list === undefined) eventsOf.set(event.requestId, [described]);
    else list.push(described);
    messagesOf.set(event.requestId, [...(messagesOf.get(event.requestId) ?? []), m]);
  }
  const duplicated: string[] = [];
  for (const [requestId, events] of eventsOf) {
    if (events.length < 2) continue;
    duplicated.push(requestId);
    verdict.add("duplicate-event-for-requestId", `${requestId}: ${events.join(", ")}`, events.length - 1);
  }
  const dumpDir = chaosLogDir();
  if (dumpDir !== undefined && duplicated.length > 0) dumpDuplicates(dumpDir, duplicated, records, messagesOf);
  for (const r of records) {
    if (mustAppend(r) && !eventsOf.has(r.requestId))
      verdict.add("acknowledged-command-lost", `${r.client} ${r.command} ${JSON.stringify(r.body)} answered ${JSON.stringify(r.result)}`);
  }
}

/**
 * With LEASEHOLD_CHAOS_LOG_DIR set, writes `<dir>/duplicates.jsonl`: for each
 * requestId the stream holds more than once, the client's record (every
 * attempt, with when it was sent and how it ended) and each of its events
 * with subject, sequence, stored time and msg id, to read the failure in full
 * beside the instances' logs.
 */
function dumpDuplicates(
  dir: string,
  requestIds: readonly string[],
  records: readonly OpRecord[],
  messagesOf: ReadonlyMap<string, readonly StoredMessage[]>,
): void {
  const decoder = new TextDecoder();
  const lines = requestIds.map((requestId) =>
    JSON.stringify({
      requestId,
      record: records.find((r) => r.requestId === requestId),
      events: (messagesOf.get(requestId) ?? []).map((m) => ({
        seq: m.seq,
        subject: m.subject,
        time: new Date(m.time).toISOString(),
        msgId: m.msgId,
        event: JSON.parse(decoder.decode(m.payload)) as unknown,
      })),
    }),
  );
  writeFileSync(join(dir, "duplicates.jsonl"), lines.join("\n") + "\n");
}

/** A success that the contract says was recorded with an event. */
function mustAppend(r: OpRecord): boolean {
  if (r.result.status !== "ok") return false;
  switch (r.command) {
    case "lock.acquire":
    case "lock.renew":
    case "lock.release":
    case "lock.reset":
    case "proxy.acquire":
      return true;
    case "proxy.report":
      return r.result.body.cooldownUntilAt !== undefined;
    case "route.acquire":
      return r.result.body.reused === false;
    default:
      return false;
  }
}

/** When the stream stored the (first) event of each requestId, epoch ms. */
function storedAtByRequestId(messages: readonly StoredMessage[]): Map<string, number> {
  const decoder = new TextDecoder();
  const times = new Map<string, number>();
  for (const m of messages) {
    try {
      const requestId = (JSON.parse(decoder.decode(m.payload)) as { requestId?: unknown }).requestId;
      if (typeof requestId === "string" && !times.has(requestId)) times.set(requestId, m.time);
    } catch {
      // the audit names it
    }
  }
  return times;
}

/**
 * The lock history of the records, as the checker takes it. An operation
 * whose outcome the client never learned is resolved with the stream when
 * `storedAt` is given: no event with its requestId means it changed nothing
 * (every lock change appends one), so it is left out; an event means it took
 * effect no later than the stream stored it, which bounds its window. Both
 * keep the search small without trusting the service's replies. An
 * operation refused after an attempt that timed out, whose event the stream
 * holds all the same, is two: the refusal, and that earlier attempt.
 */
export function lockHistory(records: readonly OpRecord[], storedAt?: ReadonlyMap<string, number>): Operation<LockInput, LockOutput>[] {
  const ops: Operation<LockInput, LockOutput>[] = [];
  for (const r of records) {
    if (!r.command.startsWith("lock.") || neverReceived(r)) continue;
    const stored = storedAt?.get(r.requestId);
    if (r.result.status === "unknown" && storedAt !== undefined && stored === undefined) continue;
    const b = r.body as Record<string, string | number | undefined>;
    let input: LockInput;
    switch (r.command) {
      case "lock.acquire":
        input = { op: "acquire", owner: String(b.owner), ttlMs: Number(b.ttlMs) };
        break;
      case "lock.renew":
        input = { op: "renew", owner: String(b.owner), etag: String(b.etag), ttlMs: b.ttlMs === undefined ? undefined : Number(b.ttlMs) };
        break;
      case "lock.release":
        input = { op: "release", etag: String(b.etag) };
        break;
      case "lock.get":
        input = { op: "get" };
        break;
      case "lock.reset":
        input = { op: "reset" };
        break;
      default:
        continue;
    }
    let output: LockOutput | undefined;
    if (r.result.status === "ok") {
      const lease = r.result.body.lease as Record<string, unknown> | null | undefined;
      output = lease === undefined ? { ok: true } : { ok: true, lease: lease === null ? null : leaseView(lease) };
    } else if (r.result.status === "error") {
      const d = r.result.details;
      output =
        typeof d.owner === "string" && typeof d.expiresAt === "string"
          ? { ok: false, code: r.result.code, holder: { owner: d.owner, expiresAtMs: Date.parse(d.expiresAt) } }
          : { ok: false, code: r.result.code };
    }
    ops.push({
      id: r.id,
      key: String(b.name),
      input,
      output,
      invokeAt: r.invokeAt,
      returnAt: output === undefined ? (stored ?? null) : r.returnAt,
    });
    // A refusal answers only the attempt that got it. An earlier attempt that got no answer may still be carried
    // out (a request held in a stalled route reaches a service after the heal), since the contract decides a
    // failed command again: when the stream holds its event, that attempt is an operation of its own.
    if (r.result.status === "error" && stored !== undefined && r.attempts.some((a) => a.outcome === "timeout")) {
      ops.push({ id: -r.id, key: String(b.name), input, output: undefined, invokeAt: r.invokeAt, returnAt: stored });
    }
  }
  return ops;
}

function leaseView(lease: Record<string, unknown>): LockLeaseView {
  return {
    owner: String(lease.owner),
    generation: Number(lease.generation),
    etag: String(lease.etag),
    expiresAtMs: Date.parse(String(lease.expiresAt)),
    ttlMs: Number(lease.ttlMs),
  };
}

/** Checks every lock's history; returns the names of the locks that failed. */
function checkLocks(records: readonly OpRecord[], storedAt: ReadonlyMap<string, number>, verdict: VerdictBuilder): string[] {
  const history = lockHistory(records, storedAt);
  verdict.lockOperations = history.length;
  const result = checkLinearizable(lockModel, history, { maxStepsPerKey: 2_000_000 });
  const failed: string[] = [];
  for (const key of result.keys) {
    if (key.ok === true) continue;
    failed.push(key.key);
    if (key.ok === "unknown") verdict.undecidedLocks++;
    verdict.add(
      "lock-history-not-linearizable",
      `lock ${key.key}: ${key.ok === "unknown" ? "undecided after" : "no linearization of"} ${key.operations} operations (${key.steps} steps); longest linearizable prefix ${key.longestPrefix.length} ops`,
    );
  }
  return failed;
}

/**
 * With LEASEHOLD_CHAOS_LOG_DIR set, writes each failed lock's client records
 * and stream events to `<dir>/lock-<name>.jsonl`, in time order, to read a
 * failure in full.
 */
function dumpLocks(
  dir: string,
  names: readonly string[],
  records: readonly OpRecord[],
  messages: readonly StoredMessage[],
  prefix: string,
): void {
  const subjects = new Subjects(prefix);
  const decoder = new TextDecoder();
  for (const name of names) {
    const lines: [number, string][] = [];
    for (const r of records)
      if (r.command.startsWith("lock.") && r.body.name === name) lines.push([r.invokeAt, JSON.stringify({ record: r })]);
    const subject = subjects.event("lock", name);
    for (const m of messages)
      if (m.subject === subject)
        lines.push([m.time, JSON.stringify({ seq: m.seq, time: m.time, event: JSON.parse(decoder.decode(m.payload)) as unknown })]);
    lines.sort((a, b) => a[0] - b[0]);
    writeFileSync(join(dir, `lock-${name}.jsonl`), lines.map(([, line]) => line).join("\n") + "\n");
  }
}

/** With no moves and every host healthy, a conversation key stays on one host: every acquire answer for it names the same host. */
function checkRouteAnswers(records: readonly OpRecord[], verdict: VerdictBuilder): void {
  const hosts = new Map<string, Set<string>>();
  for (const r of records) {
    if (r.command !== "route.acquire" || r.result.status !== "ok") continue;
    const key = JSON.stringify([r.body.route, r.body.fp, r.body.model]);
    const set = hosts.get(key) ?? new Set<string>();
    set.add(String(r.result.body.host));
    hosts.set(key, set);
  }
  for (const [key, set] of hosts)
    if (set.size > 1) verdict.add("route-key-on-two-hosts", `key ${key} answered with hosts ${[...set].join(", ")}`, set.size - 1);
}

/** Attempts that got no reply at all while no fault excused it (a graceful SIGTERM excuses nothing). */
export function checkTimeouts(records: readonly OpRecord[], outages: readonly Outage[], origin: number, verdict: VerdictBuilder): void {
  for (const r of records) {
    for (const a of r.attempts) {
      if (a.outcome !== "timeout" && a.outcome !== "no-responders" && a.outcome !== "failed") continue;
      if (outages.some((o) => a.sentAt >= o.from && a.sentAt < o.until)) continue;
      verdict.add("attempt-timed-out-outside-faults", `${r.client} ${r.command} ${a.outcome} sent at +${a.sentAt - origin} ms`);
    }
  }
}
