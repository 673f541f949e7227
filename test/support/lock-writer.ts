/** Writes lock histories straight to an event log, as the service would: acquire and release in turn, each with its message id. */
import { encodeEvent, type EventEnvelope } from "../../src/events/envelope.ts";
import { type EventLog } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { T0 } from "./lock-given.ts";

/** Appends the next event of lock `name`: an acquire (with a requestId) when it is free, else a release. */
export class LockWriter<L extends EventLog = EventLog> {
  private readonly held = new Map<string, number>();
  /** The message ids of the acquires, whose replies are remembered. */
  readonly requests: string[] = [];
  private n = 0;
  constructor(
    readonly log: L,
    private readonly subjects = new Subjects("t"),
  ) {}
  async next(name: string): Promise<void> {
    const subject = this.subjects.event("lock", name);
    const at = new Date(T0 + ++this.n).toISOString();
    const generation = this.held.get(name);
    const acquire = generation === undefined || generation < 0;
    const next = acquire ? -(generation ?? 0) + 1 : -generation;
    const event: EventEnvelope = acquire
      ? {
          type: "LockAcquired",
          v: 1,
          at,
          kind: "lock",
          id: name,
          requestId: `r${this.n}`,
          data: {
            owner: `o${this.n}`,
            generation: next,
            ttlMs: 1000,
            expiresAt: new Date(T0 + this.n + 1000).toISOString(),
            previousOwner: "",
          },
        }
      : { type: "LockReleased", v: 1, at, kind: "lock", id: name, data: { owner: "x", generation } };
    const last = await this.log.lastSubjectSeq(subject);
    await this.log.append(subject, encodeEvent(event), { expectedLastSubjectSeq: last, msgId: `${subject}|op|r${this.n}` });
    this.held.set(name, next);
    if (acquire) this.requests.push(`${subject}|op|r${this.n}`);
  }
}
