/**
 * An in-memory {@link EventLog} with the same semantics as the JetStream one
 * (expected-sequence conflicts, message-id dedup within a window), for
 * simulations and unit tests. Faults can be injected to exercise the
 * ambiguous-append paths of the actor runtime.
 */
import type { AppendOptions, AppendResult, EventLog, FollowOptions, Following, StoredMessage, StreamRange } from "./event-log.ts";
import { LogUnavailableError, WrongLastSequenceError } from "./event-log.ts";

/** A fault the next append suffers. */
export type AppendFault =
  /** Stored, but the acknowledgement is lost. */
  | "timeout-after-store"
  /** Not stored, and the writer is told nothing in time. */
  | "timeout-before-store";

/** Options of the in-memory log. */
export interface MemoryEventLogOptions {
  /** Clock used for message times and the dedup window (epoch ms). */
  readonly now?: () => number;
  /** Duplicate window for message ids, milliseconds (default 120000). */
  readonly dedupWindowMs?: number;
}

/** An in-memory {@link EventLog}. */
export class MemoryEventLog implements EventLog {
  readonly messages: StoredMessage[] = [];
  private readonly lastBySubject = new Map<string, number>();
  private readonly msgIds = new Map<string, { seq: number; time: number }>();
  private readonly followers = new Set<{ filter: RegExp | null; fn: (m: StoredMessage) => void }>();
  private readonly faults: AppendFault[] = [];
  private readonly now: () => number;
  private readonly dedupWindowMs: number;

  constructor(options: MemoryEventLogOptions = {}) {
    this.now = options.now ?? Date.now;
    this.dedupWindowMs = options.dedupWindowMs ?? 120_000;
  }

  /** Makes the next appends suffer these faults, in order. */
  injectFaults(...faults: AppendFault[]): void {
    this.faults.push(...faults);
  }

  append(subject: string, payload: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    const fault = this.faults.shift();
    if (fault === "timeout-before-store") {
      return Promise.reject(new LogUnavailableError("append timed out (injected)", true));
    }
    const time = this.now();
    const seen = this.msgIds.get(options.msgId);
    if (seen !== undefined && time - seen.time < this.dedupWindowMs) {
      return Promise.resolve({ seq: seen.seq, duplicate: true });
    }
    const last = this.lastBySubject.get(subject) ?? 0;
    if (last !== options.expectedLastSubjectSeq) {
      return Promise.reject(new WrongLastSequenceError(subject, options.expectedLastSubjectSeq, { actual: last }));
    }
    const seq = this.messages.length + 1;
    const message: StoredMessage = { seq, subject, payload, time, msgId: options.msgId };
    this.messages.push(message);
    this.lastBySubject.set(subject, seq);
    this.msgIds.set(options.msgId, { seq, time });
    for (const f of this.followers) if (f.filter === null || f.filter.test(subject)) f.fn(message);
    if (fault === "timeout-after-store") {
      return Promise.reject(new LogUnavailableError("acknowledgement lost (injected)", true));
    }
    return Promise.resolve({ seq, duplicate: false });
  }

  /** Appends without any check, as a broken or hostile writer would (tests only). */
  appendRaw(subject: string, payload: Uint8Array): number {
    const seq = this.messages.length + 1;
    const message: StoredMessage = { seq, subject, payload, time: this.now() };
    this.messages.push(message);
    this.lastBySubject.set(subject, seq);
    for (const f of this.followers) if (f.filter === null || f.filter.test(subject)) f.fn(message);
    return seq;
  }

  lastSubjectSeq(subject: string): Promise<number> {
    if (!subject.includes("*") && !subject.includes(">")) return Promise.resolve(this.lastBySubject.get(subject) ?? 0);
    const matcher = subjectMatcher(subject);
    for (let i = this.messages.length - 1; i >= 0; i--) if (matcher.test(this.messages[i]!.subject)) return Promise.resolve(i + 1);
    return Promise.resolve(0);
  }

  readSubject(subject: string, fromSeq: number): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    for (let i = Math.max(0, fromSeq - 1); i < this.messages.length; i++) {
      const m = this.messages[i]!;
      if (m.subject === subject) out.push(m);
    }
    return Promise.resolve(out);
  }

  // eslint-disable-next-line @typescript-eslint/require-await -- same async signature as the JetStream log
  async *readStream(range: StreamRange = {}): AsyncIterable<StoredMessage> {
    const filter = range.filter === undefined ? null : subjectMatcher(range.filter);
    const end = Math.min(this.messages.length, range.toSeq ?? Infinity);
    for (let i = Math.max(0, (range.fromSeq ?? 1) - 1); i < end; i++) {
      const m = this.messages[i]!;
      if (range.toTime !== undefined && m.time > range.toTime) return;
      if (filter === null || filter.test(m.subject)) yield m;
    }
  }

  async scan(range: StreamRange, visit: (message: StoredMessage) => boolean | void): Promise<void> {
    const messages: StoredMessage[] = [];
    for await (const m of this.readStream(range)) messages.push(m);
    // With how much of the range is left, as a JetStream consumer says.
    for (let i = 0; i < messages.length; i++) if (visit({ ...messages[i]!, pending: messages.length - i - 1 }) === false) return;
  }

  follow(fromSeq: number, onMessage: (message: StoredMessage) => void, filterOrOptions?: string | FollowOptions): Promise<Following> {
    const filter = typeof filterOrOptions === "object" ? filterOrOptions.filter : filterOrOptions;
    const matcher = filter === undefined ? null : subjectMatcher(filter);
    // The backlog is handed over with how much of it is left, as a JetStream consumer says.
    const backlog = this.messages.slice(Math.max(0, fromSeq - 1)).filter((m) => matcher === null || matcher.test(m.subject));
    backlog.forEach((m, i) => onMessage({ ...m, pending: backlog.length - i - 1 }));
    const entry = { filter: matcher, fn: onMessage };
    this.followers.add(entry);
    return Promise.resolve({
      stop: () => {
        this.followers.delete(entry);
        return Promise.resolve();
      },
      restart: () => undefined,
      // Delivery is synchronous with the append: a follower is always caught up.
      caughtUp: () => Promise.resolve(true),
      vouchesForLeader: true,
    });
  }

  lastSeq(): Promise<number> {
    return Promise.resolve(this.messages.length);
  }
}

/** Compiles a NATS subject filter (`*` one token, `>` the rest) to a RegExp. */
export function subjectMatcher(filter: string): RegExp {
  const parts = filter.split(".").map((t) => (t === "*" ? "[^.]+" : t === ">" ? ".+" : t.replace(/[\\^$+?()[\]{}|-]/g, "\\$&")));
  return new RegExp(`^${parts.join("\\.")}$`);
}
