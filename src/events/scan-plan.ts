/**
 * Where a read of one kind's backlog is filtered: by the server (a consumer
 * on the kind's subjects) or by this process (a consumer on the whole
 * stream, keeping the kind's messages). nats-server 2.10 delivers a
 * consumer filtered on a wildcard of a few thousand subjects at a few
 * thousand messages a second (120,000 lock events on 5,000 names: 49 s,
 * against 1.0 s for the same read unfiltered; 2.15 is about four times
 * slower filtered too), so a start or a catch-up over such a backlog took
 * minutes. Reading the whole stream costs a delivery per event of every
 * kind, so it is chosen only where the kind holds a fair share of the range.
 */
import { AckPolicy, DeliverPolicy, type JetStreamManager } from "@nats-io/jetstream";
import { withDeadline } from "./deadline.ts";

/** The least share of a range's messages a kind must hold to be read unfiltered. */
const DENSE_SHARE = 0.25;

/** How to read one kind's messages between two sequences. */
export type ScanPlan =
  | { readonly filter: string }
  /** Read `filter` (the whole stream) and keep the messages `keep` accepts; the kind holds `count` from the range's start on. */
  | { readonly filter: string; readonly keep: (subject: string) => boolean; readonly count: number };

/** What {@link planScan} reads the stream with. */
export interface ScanPlanSource {
  readonly jsm: JetStreamManager;
  readonly stream: string;
  /** The stream's own subjects (one filter, e.g. `<prefix>.events.>`). */
  readonly streamSubjects: string;
  readonly timeoutMs: number;
}

/**
 * The plan for reading `filter` over `fromSeq..toSeq`: unfiltered when the
 * kind holds at least {@link DENSE_SHARE} of the range (counted by the
 * server: one consumer created with its pending count, then deleted), else
 * filtered by the server. A count that fails keeps the server's filter.
 */
export async function planScan(source: ScanPlanSource, filter: string, fromSeq: number, toSeq: number): Promise<ScanPlan> {
  const { jsm, stream, streamSubjects, timeoutMs } = source;
  if (filter === streamSubjects || toSeq < fromSeq) return { filter };
  let count: number;
  try {
    const info = await withDeadline(
      jsm.consumers.add(stream, {
        filter_subject: filter,
        deliver_policy: DeliverPolicy.StartSequence,
        opt_start_seq: fromSeq,
        ack_policy: AckPolicy.None,
        mem_storage: true,
        num_replicas: 1,
        inactive_threshold: 5_000_000_000, // ns: gone by itself if the delete below is lost
      }),
      timeoutMs,
      `count of ${filter}`,
    );
    count = info.num_pending;
    void jsm.consumers.delete(stream, info.name).catch(() => undefined);
  } catch {
    return { filter };
  }
  if (count < DENSE_SHARE * (toSeq - fromSeq + 1)) return { filter };
  return { filter: streamSubjects, keep: subjectMatcher(filter), count };
}

/** Whether a subject matches a NATS subject filter (`*` one token, `>` the rest). */
export function subjectMatcher(filter: string): (subject: string) => boolean {
  const head = filter.slice(0, -1);
  if (filter.endsWith(".*") && !/[*>]/.test(head)) {
    // The kinds' filters (`<prefix>.events.<kind>.*`): a test per message without splitting it.
    return (subject) => subject.length > head.length && subject.startsWith(head) && subject.indexOf(".", head.length) < 0;
  }
  const tokens = filter.split(".");
  const tail = tokens.at(-1) === ">";
  const fixed = tail ? tokens.slice(0, -1) : tokens;
  return (subject) => {
    const parts = subject.split(".");
    if (tail ? parts.length <= fixed.length : parts.length !== fixed.length) return false;
    for (let i = 0; i < fixed.length; i++) if (fixed[i] !== "*" && fixed[i] !== parts[i]) return false;
    return true;
  };
}
