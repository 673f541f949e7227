/**
 * Looks at the stream that tell a kind projection it holds what was written
 * before a read: whether the stream holds any message of the kind from the
 * follower's position on first (one look for every concurrent caller, a
 * short answer when it holds none), the leader's last sequence on the kind's
 * filter or one subject otherwise. Every look is bounded.
 */
import { withDeadline } from "../../events/deadline.ts";
import { type EventLog } from "../../events/event-log.ts";
import type { ActorKind } from "../../contract/subjects.ts";
import { batchedCatchUp } from "../batched-catch-up.ts";
import type { ProjectionFollower } from "../kind-projection.ts";

/**
 * How long the stream is given to say whether the follower is caught up
 * (it answers in about a millisecond). Every fresh look of the kind waits on
 * this one, so a request lost while NATS reconnects must not hold them all
 * for the whole operation timeout: past this, the leader is asked instead,
 * with the time the request has left.
 */
const KIND_LOOK_MS = 500;

/** Settings of {@link FreshnessLooks}. */
export interface FreshnessLooksOptions {
  readonly log: EventLog;
  readonly kind: ActorKind;
  /** The kind's subject filter (`<prefix>.events.<kind>.*`). */
  readonly filter: string;
  readonly follower: ProjectionFollower;
  /** Deadline of each look at the stream. */
  readonly opTimeoutMs: number;
  /** Default deadline of a fresh read (the request timeout). */
  readonly readTimeoutMs: number;
}

/** Read-your-writes for one kind's projection, across instances. */
export class FreshnessLooks {
  private readonly subjectLooks = new Map<string, () => Promise<void>>();

  constructor(private readonly options: FreshnessLooksOptions) {}

  /**
   * Resolves once every event of the kind the stream held when called is
   * folded; rejects at `timeoutMs`. Concurrent callers share looks.
   */
  fresh(timeoutMs = this.options.readTimeoutMs): Promise<void> {
    return withDeadline(this.sharedFresh(), timeoutMs, `the ${this.options.kind} projection to catch up`);
  }

  /**
   * Resolves once the projection holds the last event of one subject (an
   * actor's), whoever wrote it; rejects at `timeoutMs`. Concurrent callers
   * share the kind's look, and those of one subject the leader's.
   */
  freshSubject(subject: string, timeoutMs = this.options.readTimeoutMs): Promise<void> {
    const { log, follower, opTimeoutMs } = this.options;
    let shared = this.subjectLooks.get(subject);
    if (shared === undefined) {
      const look = batchedCatchUp(async () => {
        if (follower.following?.vouchesForLeader === true && (await this.kindCaughtUp())) return;
        await follower.reached(await log.lastSubjectSeq(subject, opTimeoutMs), opTimeoutMs);
      });
      shared = () => {
        const run = look();
        const forget = () => {
          if (this.subjectLooks.get(subject) === shared) this.subjectLooks.delete(subject);
        };
        run.then(forget, forget);
        return run;
      };
      this.subjectLooks.set(subject, shared);
    }
    return withDeadline(shared(), timeoutMs, `the ${this.options.kind} projection to catch up with ${subject}`);
  }

  private readonly sharedFresh = batchedCatchUp(async () => {
    // On a replicated stream a leader cut off from its quorum may answer from its past (docs/cluster.md): the read
    // models take that window for a look whose cost does not grow with the stream; verified answers
    // (`freshSubject`) do not.
    if (await this.kindCaughtUp()) return;
    // Otherwise (events of the kind stored past the follower, or no answer in time) the leader's last sequence on the filter.
    const { log, filter, follower, opTimeoutMs } = this.options;
    const last = await log.lastSubjectSeq(filter, opTimeoutMs);
    await follower.reached(last, opTimeoutMs);
  });

  /**
   * Asks the stream whether it holds any event of the kind from the
   * follower's position on (not the follower's consumer: nats-server
   * acknowledges an append before it tells the consumers, so a consumer
   * could say "nothing pending" without a write another client already saw
   * acknowledged). None: every event of the kind stored before this look is
   * folded. One look serves every concurrent caller, whichever subject they
   * care about, and its "none" is a short error, where the leader's "last
   * message on a subject" carries that message (a route's first placement
   * names every candidate: 7 KB with 1,000 hosts). False when it holds one,
   * or does not answer within {@link KIND_LOOK_MS}.
   */
  private readonly kindCaughtUp = batchedCatchUp<boolean>(() => {
    const { follower, opTimeoutMs } = this.options;
    return follower.following?.caughtUp(Math.min(opTimeoutMs, KIND_LOOK_MS)).catch(() => false) ?? Promise.resolve(false);
  });
}
