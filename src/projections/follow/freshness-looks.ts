/**
 * Looks at the stream that tell a kind projection it holds what was written
 * before a read: the follower's own consumer first (a few hundred bytes, one
 * look for every concurrent caller), the leader's last sequence on the
 * kind's filter or one subject otherwise. Every look is bounded.
 */
import { withDeadline } from "../../events/deadline.ts";
import { type EventLog } from "../../events/event-log.ts";
import type { ActorKind } from "../../contract/subjects.ts";
import { batchedCatchUp } from "../batched-catch-up.ts";
import type { ProjectionFollower } from "../kind-projection.ts";

/**
 * How long the follower's consumer is given to say whether it is caught up
 * (it answers in about a millisecond). Every fresh look of the kind waits on
 * this one, so a request lost while NATS reconnects must not hold them all
 * for the whole operation timeout: past this, the leader is asked instead,
 * with the time the request has left.
 */
const CONSUMER_LOOK_MS = 500;

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
   * share the consumer's look, and those of one subject the leader's.
   */
  freshSubject(subject: string, timeoutMs = this.options.readTimeoutMs): Promise<void> {
    const { log, follower, opTimeoutMs } = this.options;
    let shared = this.subjectLooks.get(subject);
    if (shared === undefined) {
      const look = batchedCatchUp(async () => {
        if (follower.following?.vouchesForLeader === true && (await this.consumerCaughtUp())) return;
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
    // On a replicated stream the consumer's server may be a replica a moment
    // behind the leader (docs/cluster.md): the read models take that window
    // for a look whose cost does not grow with the stream; verified answers
    // (`freshSubject`) do not.
    if (await this.consumerCaughtUp()) return;
    // Otherwise (messages pending or in flight, or the consumer being re-created) the leader's last sequence on the filter.
    const { log, filter, follower, opTimeoutMs } = this.options;
    const last = await log.lastSubjectSeq(filter, opTimeoutMs);
    await follower.reached(last, opTimeoutMs);
  });

  /**
   * Asks the follower's own consumer whether the server has nothing pending
   * for it and we got everything it delivered: then every event of the kind
   * stored before this look is folded. One look serves every concurrent
   * caller, whichever subject they care about, and its answer is a few
   * hundred bytes, where the leader's "last message on a subject" carries
   * that message (a route's first placement names every candidate: 7 KB
   * with 1,000 hosts). False when the consumer cannot tell, or does not
   * answer within {@link CONSUMER_LOOK_MS}.
   */
  private readonly consumerCaughtUp = batchedCatchUp<boolean>(() => {
    const { follower, opTimeoutMs } = this.options;
    return follower.following?.caughtUp(Math.min(opTimeoutMs, CONSUMER_LOOK_MS)).catch(() => false) ?? Promise.resolve(false);
  });
}
