/**
 * The audit's checks split over two workers (worker-read.ts runs them): the
 * main thread sends each message to a lane by its subject alone, with no
 * JSON decoded, and each lane's worker decodes, folds and checks its own
 * kinds. The kinds whose checks read each other's state share a lane (a
 * lock's acquisition reads its session; a placement reads its host and a
 * host's admission reads its routes), and every subject stays on one lane,
 * so each lane's {@link Auditor} finds on its messages exactly what one
 * auditor of the whole stream would. This module puts the lanes' findings
 * back in stream order and keeps what depends on the whole stream: the
 * reported range (`--from`), the counts and the progress.
 */
import { ACTOR_KINDS, type ActorKind, type Subjects } from "../contract/subjects.ts";
import type { StoredMessage } from "../events/event-log.ts";
import { compareCodeUnits } from "../contract/code-units.ts";
import { BATCH_MESSAGES } from "../threads/message-batches.ts";
import { actorCounts, ReportingStart, type AuditOptions, type AuditRule, type AuditSummary, type Violation } from "./audit.ts";
import type { LaneFindings } from "./worker-protocol.ts";

/**
 * The lane of each kind: locks with their sessions, routes with their hosts;
 * proxies go with locks, which shares the checks' time about evenly between
 * the lanes on the simulated workload (routes cost the most per event).
 */
const LANE_OF_KIND: Readonly<Record<ActorKind, 0 | 1>> = { lock: 0, session: 0, proxy: 0, route: 1, host: 1 };

/** How many lanes a split audit has. */
export const AUDIT_LANES = 2;

/**
 * The audit splits its checks from this many cores on. On two, the read is
 * CPU-bound as a whole: the NATS client's thread, the server and the checks
 * already fill both cores, and a second worker only adds its start and the
 * merge (about 0.5 CPU s on 1,000,000 events; bench/README.md, "audit
 * headroom").
 */
export const SPLIT_FROM_CORES = 3;

/** Each kind's lane by the kind's first letter (the kinds' initials differ). */
const LANE_OF_INITIAL = new Uint8Array(128);
for (const kind of ACTOR_KINDS) LANE_OF_INITIAL[kind.charCodeAt(0)] = LANE_OF_KIND[kind];
if (new Set(ACTOR_KINDS.map((k) => k[0])).size !== ACTOR_KINDS.length) throw new Error("the split audit tells kinds by their first letter");

/**
 * The lane that checks messages on `subject`: its kind's, read from the
 * letter after `<prefix>.events.`. A subject of no kind (not one leasehold
 * writes) goes to lane 0; a subject always goes to the same lane.
 */
export function auditLaneOf(subjects: Subjects): (message: StoredMessage) => number {
  const head = `${subjects.prefix}.events.`;
  return (message) => (message.subject.startsWith(head) ? (LANE_OF_INITIAL[message.subject.charCodeAt(head.length)] ?? 0) : 0);
}

/** One stretch of the read, as the pipe sent it to every lane: each message's lane, and where progress is told. */
interface Stretch {
  /** Messages read before this stretch. */
  readonly base: number;
  readonly lanes: Uint8Array;
  count: number;
  /** The sequence of each message at which progress is told (every `progressEvery`-th read). */
  readonly progress: { read: number; seq: number }[];
}

/**
 * The main thread's side of a split audit: told of each message as it is
 * read ({@link visit}) and of each lane's findings per batch
 * ({@link laneFound}), it calls `onViolation` and `onProgress` in stream
 * order, as one auditor of the whole stream would, and sums up.
 */
export class SplitAuditMerge {
  private readonly start: ReportingStart;
  private readonly laneOf: (message: StoredMessage) => number;
  private readonly every: number;
  private read = 0;
  private checked = 0;
  private firstChecked = 0;
  private lastChecked = 0;
  /** The read count of the first message reported (Infinity before it). */
  private reportFrom = Infinity;
  private violations = 0;
  private readonly byRule = new Map<AuditRule, number>();
  /** Stretches read whose lanes have not all answered yet, oldest first. */
  private readonly stretches: Stretch[] = [];
  /** Each lane's answers per batch, oldest first, not yet merged. */
  private readonly found: LaneFindings[][] = Array.from({ length: AUDIT_LANES }, () => []);
  private readonly started = Date.now();

  constructor(
    subjects: Subjects,
    private readonly options: AuditOptions,
  ) {
    this.start = new ReportingStart(options);
    this.laneOf = auditLaneOf(subjects);
    this.every = options.progressEvery ?? 10_000;
  }

  /** Told of each message handed to the lanes, in stream order; answers the message's lane. */
  visit(message: StoredMessage): number {
    const read = ++this.read;
    if (this.start.reports(message)) {
      if (this.reportFrom === Infinity) this.reportFrom = read;
      this.checked++;
      if (this.firstChecked === 0) this.firstChecked = message.seq;
      this.lastChecked = message.seq;
    }
    let stretch = this.stretches.at(-1);
    if (stretch === undefined || stretch.count === BATCH_MESSAGES) {
      stretch = { base: read - 1, lanes: new Uint8Array(BATCH_MESSAGES), count: 0, progress: [] };
      this.stretches.push(stretch);
    }
    const lane = this.laneOf(message);
    stretch.lanes[stretch.count++] = lane;
    if (this.options.onProgress !== undefined && read % this.every === 0) stretch.progress.push({ read, seq: message.seq });
    return lane;
  }

  /** Told of what lane `lane` found in its next batch (in the pipe's order). */
  laneFound(lane: number, findings: LaneFindings): void {
    this.found[lane]!.push(findings);
    while (this.stretches.length > 0 && this.found.every((queue) => queue.length > 0)) {
      this.merge(
        this.stretches.shift()!,
        this.found.map((queue) => queue.shift()!),
      );
    }
  }

  /** Reports one stretch's findings in stream order, with progress where it falls. */
  private merge(stretch: Stretch, findings: LaneFindings[]): void {
    const { onProgress } = this.options;
    const tellProgress = (p: { read: number; seq: number }) => onProgress?.({ ...p, violations: this.violations });
    if (findings.every((f) => f.length === 0)) {
      for (const p of stretch.progress) tellProgress(p);
      return;
    }
    const next = new Array<number>(findings.length).fill(0);
    const seen = new Array<number>(findings.length).fill(0);
    let progress = 0;
    for (let i = 0; i < stretch.count; i++) {
      const lane = stretch.lanes[i]!;
      const index = seen[lane]!++;
      const laneFindings = findings[lane]!;
      for (let f = laneFindings[next[lane]!]; f !== undefined && f[0] === index; f = laneFindings[++next[lane]!]) {
        this.report(f[1], stretch.base + i + 1);
      }
      const p = stretch.progress[progress];
      if (p !== undefined && p.read === stretch.base + i + 1) {
        tellProgress(p);
        progress++;
      }
    }
  }

  private report(violation: Violation, read: number): void {
    if (read < this.reportFrom) return;
    this.violations++;
    this.byRule.set(violation.rule, (this.byRule.get(violation.rule) ?? 0) + 1);
    this.options.onViolation?.(violation);
  }

  /** The audit's summary, given every lane's own (whose actors are of its kinds only). */
  summary(lanes: readonly AuditSummary[]): AuditSummary {
    if (this.stretches.length > 0) throw new Error("a split audit was summed up before every lane answered");
    return {
      read: this.read,
      checked: this.checked,
      firstSeq: this.firstChecked,
      lastSeq: this.lastChecked,
      actors: actorCounts((kind) => lanes.reduce((sum, l) => sum + l.actors[kind], 0)),
      byRule: Object.fromEntries([...this.byRule].sort(([a], [b]) => compareCodeUnits(a, b))),
      violations: this.violations,
      elapsedMs: Date.now() - this.started,
    };
  }
}
