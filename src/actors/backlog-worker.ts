/**
 * The worker thread of a start's backlog fold
 * (src/projections/backlog-in-worker.ts): folds
 * the messages the main thread reads into a {@link FoldStore}, the
 * projection's own, with the kind's fold, and answers the result as one
 * snapshot part, which the projection then loads as it loads a snapshot.
 */
import { kindFolds, type KindFoldSettings } from "../logic/kind-folds.ts";
import { jobOfWorker, serveBatches } from "../threads/batch-worker.ts";
import type { BacklogAnswer, BacklogJob } from "../projections/backlog-job.ts";
import type { StoredMessage } from "../events/index.ts";
import { FoldStore, idOfSubject } from "../projections/fold-store.ts";
import { recordsOf } from "../projections/incremental-snapshots.ts";
import type { KindFold } from "../projections/kind-fold.ts";
import { encodePart, type SnapshotPart } from "../projections/projection-snapshots.ts";

const job = jobOfWorker<BacklogJob>();
// Built from the service's own settings (the runtime passes them), as its kind modules build it.
const fold = kindFolds(job.settings as KindFoldSettings)[job.kind] as unknown as KindFold<unknown>;
if (fold.foldVersion !== job.foldVersion)
  throw new Error(`the backlog worker folds ${job.kind} at version ${fold.foldVersion}, the projection at ${job.foldVersion}`);
// It answers every record at once (one snapshot part): nothing to note for a delta.
const store = new FoldStore({ fold, replies: job.replies, now: () => job.nowMs, trackChanges: false });

/**
 * Ids by subject number: the main thread numbers each subject once, so an
 * id is decoded once per subject and the records' map is keyed by one string
 * per id (its hash computed once). Void once the numbering starts again.
 */
let ids: (string | null | undefined)[] = [];
let idsOfResets = 0;
const idOf = (m: StoredMessage, subject: number, resets: number): string | null => {
  if (resets !== idsOfResets) [ids, idsOfResets] = [[], resets];
  let id = ids[subject];
  if (id === undefined) ids[subject] = id = idOfSubject(m.subject);
  return id;
};

/**
 * The last sequence folded: what the part covers. It is `job.toSeq` unless the
 * read ended sooner (a consumer on a replica that lags the stream's leader
 * may have no more to give): then the projection follows from here, and its
 * start waits until it has the leader's last event of the kind.
 */
let lastSeq = 0;

serveBatches<BacklogAnswer, never>({
  step: (m, subject, resets) => {
    store.foldStored(m, idOf(m, subject, resets));
    lastSeq = m.seq;
  },
  finish: async () => {
    const { records, replies } = store;
    const part: SnapshotPart = {
      seq: lastSeq,
      records: recordsOf(records, records.keys(), fold),
      replies: replies.latest(replies.size.entries),
      extras: {},
    };
    const { bytes, sha256 } = await encodePart(part);
    return { bytes, part: { name: "backlog", seq: lastSeq, bytes: bytes.length, sha256, records: part.records.length } };
  },
});
