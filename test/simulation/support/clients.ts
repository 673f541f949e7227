/**
 * The simulation's clients: each logical operation has one requestId and is
 * sent once or more — to the instance its plan names, again to another when
 * the answer was UNAVAILABLE or never came (a retry), at the same time to a
 * second instance (a duplicate delivery), or once more after its answer (a
 * late delivery). Every send waits for the scheduler. What the clients saw
 * is recorded in the chaos test's record format, so the same checks judge
 * both, together with every reply each delivery got.
 */
import type { Scheduler } from "fast-check";
import type { TurnResult } from "../../../src/actors/actor-runtime.ts";
import type { Attempt, OpRecord } from "../../chaos/history.ts";
import { sleep } from "./scheduled-log.ts";
import type { SimCluster, SimInstance } from "./sim-cluster.ts";

/** How one operation is delivered. */
export interface Delivery {
  /** The slots the first send and each retry go to, in order. */
  readonly slots: readonly number[];
  /** A copy of the first send to the next slot at the same time, or once more after the answer. */
  readonly duplicate: "none" | "concurrent" | "late";
}

/** One reply a delivery got, with where and when. */
export interface DeliveredReply {
  readonly instance: string;
  readonly result: TurnResult;
  readonly sentAt: number;
  readonly endAt: number;
}

/** A send the client stopped waiting for: the instance still owes an answer unless it crashed. */
export interface Overdue {
  readonly instance: SimInstance;
  readonly command: string;
  readonly requestId: string;
  readonly sentAt: number;
  /** When the instance answered after all (undefined: not yet). */
  answeredAt: number | undefined;
}

/** Records of every client of one run. */
export class SimClients {
  readonly records: OpRecord[] = [];
  readonly replies = new Map<string, DeliveredReply[]>();
  readonly overdue: Overdue[] = [];
  /** The longest any instance took to answer a send (ms of simulated time). */
  slowestAnswerMs = 0;
  private nextId = 0;
  private running = 0;

  constructor(
    private readonly cluster: SimCluster,
    private readonly s: Scheduler,
    /** How long a client waits for one answer (the service owes one within its request timeout). */
    private readonly clientTimeoutMs: number,
  ) {}

  /** No operation in progress. */
  get idle(): boolean {
    return this.running === 0;
  }

  /** Runs one operation to its answer (or until its sends are used up); resolves with what the client learned. */
  async run(client: string, command: string, body: Record<string, unknown>, delivery: Delivery): Promise<OpRecord> {
    this.running++;
    try {
      return await this.runOp(client, command, body, delivery);
    } finally {
      this.running--;
    }
  }

  private async runOp(client: string, command: string, body: Record<string, unknown>, delivery: Delivery): Promise<OpRecord> {
    const id = ++this.nextId;
    const requestId = `${client}-${id}`;
    const record: OpRecord = {
      id,
      client,
      command,
      body: { ...body, requestId },
      requestId,
      invokeAt: Date.now(),
      returnAt: null,
      result: { status: "unknown" },
      attempts: [],
    };
    this.records.push(record);
    const { slots } = delivery;
    // Every answer a delivery got (UNAVAILABLE and a timeout: undefined, the delivery may have taken effect).
    const answers: { result: TurnResult | undefined; endAt: number }[] = [];
    const learn = (result: TurnResult | undefined, endAt: number) =>
      answers.push({ result: result === undefined || isUnavailable(result) ? undefined : result, endAt });
    const answered = () => answers.some((a) => a.result !== undefined);
    const send = (slot: number) => this.send(record, slot, learn);
    let k = 0;
    if (delivery.duplicate === "concurrent") await Promise.all([send(slots[0]!), send(slots[1 % slots.length]!)]);
    else await send(slots[0]!);
    while (!answered() && ++k < slots.length) await send(slots[k]!);
    if (delivery.duplicate === "late" && answered()) await send(slots[(k + 1) % slots.length]!);
    // What the operation did: its first success (a refused delivery changed nothing, and another of the same
    // requestId may succeed: refusals are not recorded); else unknown when any delivery may have taken effect
    // unseen; else its first refusal.
    const ok = answers.find((a) => a.result?.ok === true);
    const refused = answers.find((a) => a.result !== undefined && !a.result.ok);
    const chosen = ok ?? (answers.some((a) => a.result === undefined) ? undefined : refused);
    if (chosen?.result !== undefined) {
      const result = chosen.result;
      record.returnAt = chosen.endAt;
      record.result = result.ok
        ? { status: "ok", body: (result.reply ?? {}) as Record<string, unknown> }
        : { status: "error", code: result.rejection.code, details: { ...result.rejection.details } };
    }
    return record;
  }

  private async send(record: OpRecord, slot: number, learn: (result: TurnResult | undefined, endAt: number) => unknown): Promise<void> {
    await this.s.schedule(Promise.resolve(), `${record.client} sends ${record.command} ${record.requestId} to slot ${slot}`);
    const sentAt = Date.now();
    const instance = this.cluster.instance(slot);
    const attempt = (outcome: Attempt["outcome"], code?: string) =>
      record.attempts.push({ sentAt, endAt: Date.now(), outcome, ...(code === undefined ? {} : { code }) });
    if (instance === undefined) {
      attempt("no-responders");
      return;
    }
    const call = instance.call(record.command, record.body).then((r) => {
      this.slowestAnswerMs = Math.max(this.slowestAnswerMs, Date.now() - sentAt);
      return r;
    });
    const result = await Promise.race([call, sleep(this.clientTimeoutMs).then(() => undefined)]);
    if (result === undefined) {
      attempt("timeout");
      const overdue: Overdue = { instance, command: record.command, requestId: record.requestId, sentAt, answeredAt: undefined };
      this.overdue.push(overdue);
      void call.then(() => (overdue.answeredAt = Date.now()));
      learn(undefined, Date.now());
      return;
    }
    // The service's UNAVAILABLE may follow an append that landed: the outcome stays unknown ("failed", not "unavailable").
    if (isUnavailable(result)) attempt("failed", "UNAVAILABLE");
    else attempt(result.ok ? "ok" : "error", result.ok ? undefined : result.rejection.code);
    const list = this.replies.get(record.requestId) ?? [];
    list.push({ instance: instance.name, result, sentAt, endAt: Date.now() });
    this.replies.set(record.requestId, list);
    learn(result, Date.now());
  }
}

function isUnavailable(result: TurnResult): boolean {
  return !result.ok && result.rejection.code === "UNAVAILABLE";
}
