/**
 * `leasehold audit`: a streaming checker of every invariant docs/protocol.md puts
 * on the event stream. Each message is folded with the service's own
 * `evolve` (the fold is lenient: it must rebuild whatever was written), and
 * before that, checked against the state so far by rules that are strict
 * (they name whatever the contract forbids). Time is the event's own `at`;
 * "at that instant" for cross-actor rules (host health) means at that point
 * of the stream, which totally orders every actor's events.
 */
import { hostEventSchemas } from "../host/events.ts";
import { isUnparsable, type EventEnvelope } from "../events/envelope.ts";
import { lockEventSchemas } from "../lock/events.ts";
import { proxyEventSchemas } from "../proxy/events.ts";
import { routeEventSchemas } from "../route/events.ts";
import { sessionEventSchemas } from "../session/events.ts";
import { type StoredMessage } from "../events/event-log.ts";
import { instantMs } from "../events/envelope.ts";
import { ACTOR_KINDS, type ActorKind, type Subjects } from "../contract/subjects.ts";
import { compareCodeUnits } from "../contract/code-units.ts";
import { StreamFold, type ActorRef } from "./stream-fold.ts";
import { iso } from "./time.ts";
import type { StreamSource } from "./stream-reader.ts";
import type { AuditScope, KindChecker, KindRules } from "./audit/kind-rules.ts";
import { hostRules } from "./audit/host-rules.ts";
import { lockRules } from "./audit/lock-rules.ts";
import { proxyRules } from "./audit/proxy-rules.ts";
import { routeRules } from "./audit/route-rules.ts";
import { sessionRules } from "./audit/session-rules.ts";
import { HOLDER_PRINCIPAL_RULE, holderPrincipalBreach, type IsOperator } from "./audit/holder-principal.ts";
import { Operators } from "../contract/operators.ts";

/** Every kind's rules (src/tools/audit/): a kind's rules are one module there and one entry here. */
const KIND_RULES = [proxyRules, routeRules, hostRules, lockRules, sessionRules] as const;

/** The rules on every message, whatever its kind. */
const STREAM_RULES = {
  "event-parses": "every message is UTF-8 JSON of a known event type whose data has the fields the contract requires",
  envelope:
    "every event carries the envelope `{type, v: 1, at, kind, id, requestId?, data}`, sits on `<prefix>.events.<kind>.<token>` with kind and id matching its subject, and has a type of that kind",
  "subject-sequence": "stream sequences rise strictly along each subject",
  "subject-at-decreases": "an event's `at` is never earlier than the previous event's `at` on the same subject",
  ...HOLDER_PRINCIPAL_RULE,
} as const;

type RulesOf<K> = K extends KindRules<infer R> ? R : never;

/** The id of an audit rule. */
export type AuditRule = keyof typeof STREAM_RULES | RulesOf<(typeof KIND_RULES)[number]>;

/** Every rule the audit checks, by its stable id, with what it forbids. */
export const AUDIT_RULES = Object.fromEntries(
  [STREAM_RULES, ...KIND_RULES.map((k) => k.rules)].flatMap((rules) => Object.entries(rules)),
) as Readonly<Record<AuditRule, string>>;

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
  /** The service's --operators: principals that may act on any holder's lease (default none). */
  readonly operators?: readonly string[] | undefined;
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
  session: new Set(Object.keys(sessionEventSchemas)),
};

/** A reported rule break, before it is placed at a sequence. */
type Finding = readonly [AuditRule, string];

/** Checks one message at a time; feed it the stream in order. */
export class Auditor {
  readonly fold: StreamFold;
  /** Per subject: the highest sequence and the latest `at` (epoch ms; NaN before any event) seen on it. */
  private readonly subjectMarks = new Map<string, { lastSeq: number; lastAtMs: number }>();
  /** Each kind's checker. */
  private readonly checkers: Readonly<Record<ActorKind, KindChecker<AuditRule>>>;
  /** The findings of the message being checked. */
  private findings: Finding[] = [];
  private readonly report = (rule: AuditRule, text: string): void => void this.findings.push([rule, text]);
  private readonly byRule = new Map<AuditRule, number>();
  private violations = 0;
  private read = 0;
  private checked = 0;
  private firstChecked = 0;
  private lastChecked = 0;
  private readonly reportingStart: ReportingStart;
  private readonly started = Date.now();
  private readonly isOperator: IsOperator;

  constructor(
    subjects: Subjects,
    private readonly options: AuditOptions,
  ) {
    this.fold = new StreamFold(subjects);
    const operators = new Operators(options.operators ?? []);
    this.isOperator = (principal) => operators.includes(principal);
    this.reportingStart = new ReportingStart(options);
    const scope: AuditScope = {
      fold: this.fold,
      cooldownMs: options.cooldownMs,
      maxTtlMs: options.maxTtlMs,
      activeOnHost: new Map(),
      admissions: new Map(),
    };
    const checkers = new Map<ActorKind, KindChecker<AuditRule>>(KIND_RULES.map((k) => [k.kind, k.checker(scope)]));
    for (const kind of ACTOR_KINDS) if (!checkers.has(kind)) throw new Error(`the audit has no rules for ${kind}`);
    this.checkers = Object.fromEntries(checkers) as Record<ActorKind, KindChecker<AuditRule>>;
  }

  /** Checks one message against the state so far, then folds it. */
  check(message: StoredMessage): void {
    this.read++;
    const reporting = this.reportingStart.reports(message);
    const findings: Finding[] = (this.findings = []);
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
        this.checkers[actor.kind].check(event, actor.id, before, { atMs, seq: message.seq }, this.report);
        const breach = holderPrincipalBreach(event, before, this.fold, this.isOperator);
        if (breach !== null) findings.push(["holder-principal", breach]);
      }
    }
    if (actor !== null) this.checkers[actor.kind].folded?.(actor.id, before, this.fold.get(actor.kind, actor.id), entry);
    if (!reporting) return;
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
      actors: actorCounts((kind) => states[kind].size),
      byRule: Object.fromEntries([...this.byRule].sort(([a], [b]) => compareCodeUnits(a, b))),
      violations: this.violations,
      elapsedMs: Date.now() - this.started,
    };
  }
}

/** Actors by kind, in the order every summary lists them (the --json output's text). */
export function actorCounts(count: (kind: ActorKind) => number): Record<ActorKind, number> {
  return { proxy: count("proxy"), host: count("host"), route: count("route"), lock: count("lock"), session: count("session") };
}

/**
 * Where an audit starts reporting: at the first message at or after the
 * options' `fromSeq` or `fromTime`, and from there on (from the first message
 * without either). Earlier messages are folded silently.
 */
export class ReportingStart {
  private reached: boolean;

  constructor(private readonly options: Pick<AuditOptions, "fromSeq" | "fromTime">) {
    this.reached = options.fromSeq === undefined && options.fromTime === undefined;
  }

  /** Whether `message`, the next in stream order, is reported. */
  reports(message: StoredMessage): boolean {
    if (!this.reached) {
      const { fromSeq, fromTime } = this.options;
      this.reached = (fromSeq !== undefined && message.seq >= fromSeq) || (fromTime !== undefined && message.time >= fromTime);
    }
    return this.reached;
  }
}

/** Why an event's envelope does not fit its subject, or null when it does. */
function envelopeMismatch(event: EventEnvelope, actor: ActorRef): string | null {
  if (event.kind !== actor.kind) return `kind ${JSON.stringify(event.kind)} on a ${actor.kind} subject`;
  if (event.id !== actor.id) return `id ${JSON.stringify(event.id)} on the subject of ${actor.kind} ${JSON.stringify(actor.id)}`;
  if (!TYPES_OF_KIND[actor.kind].has(event.type)) return `${event.type} is not a ${actor.kind} event`;
  return null;
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
