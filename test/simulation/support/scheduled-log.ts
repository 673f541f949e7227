/**
 * The event log as the simulation serves it to one service instance: a view
 * of one shared {@link MemoryEventLog} in which every answer — an append's
 * acknowledgement or error, a read, each delivery to a follower — waits for
 * fast-check's scheduler to release it, so the scheduler chooses the order
 * of every promise the runtime awaits on the log. Faults come from a
 * {@link FaultPlan} drawn by fast-check: append conflicts, appends that fail,
 * appends that land but whose acknowledgement is lost, appends and reads
 * that hang until their deadline (measured on the faked timers, i.e. the
 * simulated clock), and appends stuck past their deadline (a wait only the
 * turn's own deadline ends). A crashed instance's view answers nothing again.
 */
import type { Scheduler } from "fast-check";
import {
  LogUnavailableError,
  WrongLastSequenceError,
  type AppendOptions,
  type AppendResult,
  type EventLog,
  type FollowOptions,
  type Following,
  type StoredMessage,
  type StreamRange,
} from "../../../src/events/event-log.ts";
import { type MemoryEventLog } from "../../../src/events/memory-event-log.ts";

/** What happens to one append. */
export type AppendFault = "none" | "conflict" | "fail" | "lost-ack" | "hang" | "hang-after-store" | "stuck";
/** What happens to one read of a subject's last sequence. */
export type ReadFault = "none" | "fail" | "hang";

/** The faults of one run, consumed in order (past their end nothing goes wrong). */
export class FaultPlan {
  private appendAt = 0;
  private readAt = 0;
  constructor(
    private readonly appends: readonly AppendFault[],
    private readonly reads: readonly ReadFault[],
  ) {}
  nextAppend(): AppendFault {
    return this.appends[this.appendAt++] ?? "none";
  }
  nextRead(): ReadFault {
    return this.reads[this.readAt++] ?? "none";
  }
}

/** Deliberate defects of the log's writer, for the mutation checks. */
export interface LogMutation {
  /** Append without the expected last subject sequence (the writer's check is gone). */
  readonly ignoreExpectedSeq?: boolean;
}

/** A promise that never settles (a crashed process answers nothing). */
export const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

/** Resolves after `ms` on the (faked) timers. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const shortSubject = (subject: string): string => subject.split(".").slice(-2).join(".");

/** One instance's view of the shared log. */
export class ScheduledLogView implements EventLog {
  private crashed = false;
  private readonly followers = new Set<SimFollower>();

  constructor(
    private readonly inner: MemoryEventLog,
    private readonly s: Scheduler,
    private readonly plan: FaultPlan,
    readonly name: string,
    private readonly mutation: LogMutation = {},
  ) {}

  /** The instance died: nothing it asked is answered, its followers deliver nothing more. */
  crash(): void {
    this.crashed = true;
    for (const f of this.followers) f.stopNow();
  }

  /** Stops every follower of this view from delivering until resumed (or re-created by its owner). */
  pauseFollowers(): void {
    for (const f of this.followers) f.pause();
  }

  /** Lets paused followers deliver again. */
  resumeFollowers(): void {
    for (const f of this.followers) f.resume();
  }

  /** Waits for the scheduler to release `label`; never returns once the instance crashed. */
  private async turn(label: string): Promise<void> {
    if (this.crashed) return never();
    await this.s.schedule(Promise.resolve(), `${this.name} ${label}`);
    if (this.crashed) return never();
  }

  async append(subject: string, payload: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    const fault = this.plan.nextAppend();
    const what = `append ${shortSubject(subject)} expecting ${options.expectedLastSubjectSeq}${fault === "none" ? "" : ` [${fault}]`}`;
    const timeoutMs = options.timeoutMs ?? 5000;
    await this.turn(what);
    switch (fault) {
      case "fail":
        throw new LogUnavailableError("append refused (simulated)", false);
      case "conflict":
        throw new WrongLastSequenceError(subject, options.expectedLastSubjectSeq, { actual: await this.inner.lastSubjectSeq(subject) });
      case "hang":
        await sleep(timeoutMs);
        throw new LogUnavailableError(`append: no acknowledgement within ${timeoutMs} ms (simulated)`, true);
      default:
    }
    let ack: AppendResult;
    try {
      const expected = this.mutation.ignoreExpectedSeq ? await this.inner.lastSubjectSeq(subject) : options.expectedLastSubjectSeq;
      ack = await this.inner.append(subject, payload, { ...options, expectedLastSubjectSeq: expected });
    } catch (e) {
      await this.turn(`${what}: refused`);
      throw e;
    }
    switch (fault) {
      case "lost-ack":
        await this.turn(`${what}: stored at ${ack.seq}, acknowledgement lost`);
        throw new LogUnavailableError("append: acknowledgement lost (simulated)", true);
      case "hang-after-store":
        await sleep(timeoutMs);
        throw new LogUnavailableError(`append: stored, but no acknowledgement within ${timeoutMs} ms (simulated)`, true);
      case "stuck":
        return never();
      default:
        await this.turn(`${what}: acknowledged ${ack.seq}${ack.duplicate ? " (duplicate)" : ""}`);
        return ack;
    }
  }

  async lastSubjectSeq(subject: string, timeoutMs = 5000): Promise<number> {
    const fault = this.plan.nextRead();
    await this.turn(`read last of ${shortSubject(subject)}${fault === "none" ? "" : ` [${fault}]`}`);
    if (fault === "fail") throw new LogUnavailableError("read refused (simulated)", false);
    if (fault === "hang") {
      await sleep(timeoutMs);
      throw new LogUnavailableError(`read: no answer within ${timeoutMs} ms (simulated)`, false);
    }
    return this.inner.lastSubjectSeq(subject);
  }

  async readSubject(subject: string, fromSeq: number): Promise<StoredMessage[]> {
    await this.turn(`read ${shortSubject(subject)}`);
    return this.inner.readSubject(subject, fromSeq);
  }

  async *readStream(range?: StreamRange): AsyncIterable<StoredMessage> {
    await this.turn("read stream");
    yield* this.inner.readStream(range);
  }

  async lastSeq(): Promise<number> {
    await this.turn("read last sequence");
    return this.inner.lastSeq();
  }

  async follow(fromSeq: number, onMessage: (message: StoredMessage) => void, filter?: string | FollowOptions): Promise<Following> {
    const subjects = typeof filter === "object" ? filter.filter : filter;
    await this.turn(`follow ${subjects ?? ">"} from ${fromSeq}`);
    const follower = new SimFollower(this.s, `${this.name} ${subjects?.split(".").at(-2) ?? "all"}`, onMessage, (f) =>
      this.followers.delete(f),
    );
    this.followers.add(follower);
    follower.inner = await this.inner.follow(fromSeq, (m) => follower.enqueue(m), subjects);
    return follower;
  }
}

/** A follower whose deliveries, one message at a time and in order, each wait for the scheduler. */
class SimFollower implements Following {
  private readonly queue: StoredMessage[] = [];
  private paused = false;
  private stopped = false;
  private scheduled = false;
  /** The simulated stream is one store: what it acknowledged, its followers are told of. */
  readonly vouchesForLeader = true;
  inner: Following | undefined;

  constructor(
    private readonly s: Scheduler,
    private readonly name: string,
    private readonly onMessage: (message: StoredMessage) => void,
    private readonly forget: (f: SimFollower) => void,
  ) {}

  enqueue(message: StoredMessage): void {
    this.queue.push(message);
    this.pump();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.pump();
  }

  stopNow(): void {
    this.stopped = true;
    void this.inner?.stop();
    this.forget(this);
  }

  private pump(): void {
    if (this.stopped || this.paused || this.scheduled || this.queue.length === 0) return;
    this.scheduled = true;
    void this.s.schedule(Promise.resolve(), `${this.name} deliver ${this.queue[0]!.seq}`).then(() => {
      this.scheduled = false;
      if (this.stopped || this.paused) return;
      const message = this.queue.shift()!;
      this.onMessage({ ...message, pending: this.queue.length });
      this.pump();
    });
  }

  async stop(): Promise<void> {
    this.stopNow();
    return Promise.resolve();
  }

  /** The projection's watchdog re-creates a stalled follower: it resumes from the next message. */
  restart(): void {
    this.resume();
  }

  async caughtUp(): Promise<boolean> {
    await this.s.schedule(Promise.resolve(), `${this.name} caught up? (${this.queue.length} queued${this.paused ? ", paused" : ""})`);
    return !this.stopped && !this.paused && this.queue.length === 0 && !this.scheduled;
  }
}
