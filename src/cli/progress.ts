/**
 * Progress of long stream reads (`replay`, `audit`, `status`, `tail --from-seq`)
 * on a terminal: one line on stderr (messages read, position, events/s and the
 * time left at that rate), rewritten in place at most every 100 ms, and
 * cleared once the read is done. The tools read through an EventLog that
 * reports what passes through it, so they need no progress code of their own.
 */
import type { EventLog, Following, FollowOptions, StoredMessage, StreamRange } from "../events/event-log.ts";
import { formatDuration } from "../tools/time.ts";

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
  private startedAt: number | undefined;

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
    this.startedAt ??= t;
    if (t - this.lastWrite < this.everyMs) return;
    this.lastWrite = t;
    const percent = Math.floor((100 * seq) / Math.max(1, this.total));
    this.sink.write(
      `\r${this.label}: ${this.read} messages read, at sequence ${seq} of ${this.total} (${percent}%)${this.pace(seq, t)}\u001b[K`,
    );
    this.shown = true;
  }

  /** `, <n> events/s, ETA <duration>` once some time has passed (nothing on the first update). */
  private pace(seq: number, t: number): string {
    const elapsedMs = t - (this.startedAt ?? t);
    if (elapsedMs <= 0) return "";
    const perSecond = this.read / (elapsedMs / 1000);
    const leftMs = (Math.max(0, this.total - seq) / perSecond) * 1000;
    return `, ${Math.round(perSecond)} events/s, ETA ${formatDuration(leftMs)}`;
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

/** A progress line on stderr for a read of sequences `fromSeq..total`, when stderr is a terminal and the read is long enough to notice. */
export function terminalReadProgress(label: string, total: number, fromSeq = 1): ReadProgress | undefined {
  if (process.stderr.isTTY !== true || total - fromSeq < 1000) return undefined;
  return new ReadProgress(label, total, process.stderr);
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
