/**
 * Shares catch-up queries between concurrent readers without weakening
 * read-your-writes: a reader is only ever answered by a query issued after it
 * arrived. While a query is in flight, every reader that arrives waits for
 * the next one, which starts when the current one ends; so under load one
 * query per table serves a whole batch of requests instead of one each.
 */
/** Wraps `query` (e.g. a follower's `fresh`) so that concurrent callers share runs as described above. */
export function batchedCatchUp<T = void>(query: () => Promise<T>): () => Promise<T> {
  let current: Promise<T> | undefined;
  let next: Promise<T> | undefined;
  const start = (): Promise<T> => {
    const run = query().finally(() => {
      if (current === run) current = undefined;
    });
    current = run;
    return run;
  };
  return () => {
    if (current === undefined) return start();
    if (next === undefined) {
      // Issued only once the current query has ended, hence after every caller waiting on it arrived.
      next = current
        .catch(() => undefined)
        .then(() => {
          next = undefined;
          return start();
        });
    }
    return next;
  };
}
