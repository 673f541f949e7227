/**
 * The worker thread of a start's backlog fold
 * (src/projections/backlog-in-worker.ts): folds the messages the main
 * thread reads with the kind's fold ({@link BacklogFold}, the projection's
 * own fold store), and answers the result as one snapshot part, which the
 * projection then loads as it loads a snapshot. Its sequence is `job.toSeq`
 * unless the read ended sooner (a consumer on a replica that lags the
 * stream's leader may have no more to give): then the projection follows
 * from there, and its start waits until it has the leader's last event of
 * the kind.
 */
import { kindFolds, type KindFoldSettings } from "./kind-folds.ts";
import { jobOfWorker, serveBatches } from "../threads/batch-worker.ts";
import type { BacklogAnswer, BacklogJob } from "../projections/backlog-job.ts";
import { BacklogFold } from "../projections/backlog-fold.ts";
import type { KindFold } from "../projections/kind-fold.ts";
import { encodePartWithReplies } from "../projections/projection-snapshots.ts";
import { SNAPSHOT_REPLIES } from "../projections/incremental-snapshots.ts";

const job = jobOfWorker<BacklogJob>();
// Built from the service's own settings (the runtime passes them), as its kind modules build it.
const fold = kindFolds(job.settings as KindFoldSettings)[job.kind] as unknown as KindFold<unknown>;
if (fold.foldVersion !== job.foldVersion)
  throw new Error(`the backlog worker folds ${job.kind} at version ${fold.foldVersion}, the projection at ${job.foldVersion}`);
const backlog = new BacklogFold(fold, job.replies, job.nowMs);

serveBatches<BacklogAnswer, never>({
  step: (m, subject, resets) => backlog.step(m, subject, resets),
  finish: async () => {
    const part = backlog.part();
    const [whole, base] = await encodePartWithReplies(part, [part.replies, part.replies.slice(-SNAPSHOT_REPLIES)]);
    const { count, first } = backlog.foreign;
    const entry = (name: string, e: { bytes: Uint8Array; sha256: string }) => ({
      name,
      seq: part.seq,
      bytes: e.bytes.length,
      sha256: e.sha256,
      records: part.records.length,
    });
    return {
      bytes: whole!.bytes,
      part: entry("backlog", whole!),
      base: { bytes: base!.bytes, part: entry("base", base!) },
      foreign: { count, first },
    };
  },
});
