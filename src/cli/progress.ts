/**
 * Progress of long stream reads (`replay`, `status`, `tail --from-seq`) on a
 * terminal: one line on stderr, rewritten in place at most every 100 ms, and
 * cleared once the read is done. The tools read through an EventLog that
 * reports what passes through it, so they need no progress code of their own.
 */
import type { EventLog, Following, FollowOptions, StoredMessage, StreamRange } from "../events/index.ts";

/** Where progress goes: a terminal's stderr in use; tests pass their own. */
export interface ProgressSink {
  write(text: string): unknown;
}

/** One progress line for a read up to sequence `total`. */
export class ReadProgress {
  private lastWrite = -Infinity;
  private read = 0;
  private shown = false;
  private finished = false;

  constructor(
    private readonly label: string,
    private readonly total: number,
    private readonly sink: ProgressSink,
    private readonly now: () => number = Date.now,
    private readonly everyMs = 100,
  ) {}

  /** A message with sequence `seq` was read. */
  seen(seq: number): void {
    if (this.finished) return;
    this.read++;
    if (seq >= this.total) {
      this.done();
      return;
    }
    const t = this.now();
    if (t - this.lastWrite < this.everyMs) return;
    this.lastWrite = t;
    const percent = Math.floor((100 * seq) / Math.max(1, this.total));
    this.sink.write(`\r${this.label}: ${this.read} messages read, at sequence ${seq} of ${this.total} (${percent}%)\u001b[K`);
    this.shown = true;
  }

  /** Clears the line (if shown) so that other output can be printed; it comes back with the next update. */
  clear(): void {
    if (!this.shown) return;
    this.shown = false;
    this.lastWrite = -Infinity;
    this.sink.write("\r\u001b[K");
  }

  /** The read is over: clears the line if one was shown. */
  done(): void {
    if (this.finished) return;
    this.clear();
    this.finished = true;
  }
}

/** `log` with every message read through `readStream` or `follow` reported to `progress`. */
export function withProgress(log: EventLog, progress: ReadProgress): EventLog {
  return {
    append: (subject, payload, options) => log.append(subject, payload, options),
    lastSubjectSeq: (subject, timeoutMs) => log.lastSubjectSeq(subject, timeoutMs),
    readSubject: (subject, fromSeq) => log.readSubject(subject, fromSeq),
    lastSeq: () => log.lastSeq(),
    readStream(range?: StreamRange): AsyncIterable<StoredMessage> {
      const inner = log.readStream(range);
      return {
        async *[Symbol.asyncIterator]() {
          try {
            for await (const m of inner) {
              progress.seen(m.seq);
              yield m;
            }
          } finally {
            progress.done();
          }
        },
      };
    },
    follow(fromSeq: number, onMessage: (message: StoredMessage) => void, filter?: string | FollowOptions): Promise<Following> {
      return log.follow(
        fromSeq,
        (m) => {
          progress.seen(m.seq);
          onMessage(m);
        },
        filter,
      );
    },
  };
}

/** A progress reporter on stderr when it is a terminal and the read is long enough to notice; otherwise `log` itself. */
export async function terminalProgress(
  log: EventLog,
  label: string,
  range: { fromSeq?: number | undefined; toSeq?: number | undefined } = {},
): Promise<{ log: EventLog; progress: ReadProgress | undefined }> {
  if (process.stderr.isTTY !== true) return { log, progress: undefined };
  const last = await log.lastSeq();
  const total = range.toSeq === undefined ? last : Math.min(last, range.toSeq);
  // A thousand messages read in well under a second: no line for those.
  if (total - (range.fromSeq ?? 1) < 1000) return { log, progress: undefined };
  const progress = new ReadProgress(label, total, process.stderr);
  return { log: withProgress(log, progress), progress };
}
