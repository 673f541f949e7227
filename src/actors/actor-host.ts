/**
 * The actor host: activates actors from the stream, gives each one command at
 * a time (the rest wait in its mailbox), appends their events with the
 * expected subject sequence, and turns conflicts and lost acknowledgements
 * into catch-up and a second decision. It owns all log I/O of the actors.
 */
import type { Logger } from "pino";
import { nuid } from "@nats-io/nats-core";
import {
  decodeEvent,
  encodeEvent,
  isUnparsable,
  LogUnavailableError,
  WrongLastSequenceError,
  type ActorKind,
  type EventEnvelope,
  type EventLog,
  type HistoryEntry,
  type StoredMessage,
  type Subjects,
} from "../events/index.ts";
import type { ActorLogic, Command } from "./actor-logic.ts";
import type { Cell, Turn, TurnEffects, TurnResult } from "./cell.ts";
import type { Clock } from "./clock.ts";
import { startTurnActor, type TurnEvent } from "./turn-machine.ts";
import type { SnapshotStore } from "./snapshots.ts";

/** Settings of the actor host. */
export interface ActorHostOptions {
  readonly log: EventLog;
  readonly subjects: Subjects;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How long a `requestId` is remembered (PROTOCOL.md's dedup window). */
  readonly dedupWindowMs: number;
  /** Decisions per command before giving up under contention (default 32). */
  readonly maxAttempts?: number;
  /** Message ids for commands without a `requestId` (default: NUID). */
  readonly newMsgId?: () => string;
  /** Where actor snapshots are kept; without one, every activation replays the actor's whole history. */
  readonly snapshots?: SnapshotStore;
  /** Take a snapshot after this many events applied since the last one (default 256). */
  readonly snapshotEvery?: number;
}

/** The map key of an actor (NUL cannot occur in a kind). */
const cellKey = (kind: ActorKind, id: string): string => `${kind}\u0000${id}`;

/** Replies per actor kept past the dedup window (see takeTurn). */
const KEEP_RECENT_REPLIES = 256;

const unavailable = (message: string): TurnResult => ({ ok: false, rejection: { code: "UNAVAILABLE", message } });

/** Hosts every active actor of every registered kind. */
export class ActorHost implements TurnEffects {
  private readonly cells = new Map<string, Cell>();
  private readonly logics = new Map<ActorKind, ActorLogic<unknown, Command>>();
  private readonly maxAttempts: number;
  private readonly snapshotEvery: number;
  private readonly newMsgId: () => string;
  private inFlight = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: ActorHostOptions) {
    this.maxAttempts = options.maxAttempts ?? 32;
    this.newMsgId = options.newMsgId ?? (() => nuid.next());
    this.snapshotEvery = options.snapshotEvery ?? 256;
  }

  /** Makes a kind of actor available. */
  register<S, C extends Command>(logic: ActorLogic<S, C>): void {
    this.logics.set(logic.kind, logic);
  }

  /**
   * Runs one command through the actor `kind`/`id`; resolves with its reply or refusal.
   * `requestedAt` (durable commands) is when the command was first sent: a
   * reply remembered for its `requestId` at or after that instant answers it,
   * however long ago, so a redelivery after a long outage is still a no-op.
   */
  execute<C extends Command>(kind: ActorKind, id: string, command: C, requestId?: string, requestedAt?: number): Promise<TurnResult> {
    const cell = this.cellFor(kind, id);
    this.inFlight++;
    return new Promise<TurnResult>((resolve) => {
      const turn: Turn = {
        command,
        requestId,
        requestedAt,
        // The op is part of the id so a requestId reused for another operation is not mistaken for a repeat.
        msgId: requestId === undefined ? this.newMsgId() : `${cell.subject}|${command.op}|${requestId}`,
        resolve: (result) => {
          resolve(result);
          this.inFlight--;
          if (this.inFlight === 0) this.notifyIdle();
        },
        decision: undefined,
        now: 0,
        event: undefined,
        attempts: 0,
        uncertain: 0,
        found: undefined,
      };
      cell.mailbox.push(turn);
      cell.actor!.send({ type: "MAIL" });
    });
  }

  /** The in-memory state of an active actor (undefined when it is not in memory); for inspection, not for decisions. */
  peek<S>(kind: ActorKind, id: string): S | undefined {
    return this.cells.get(cellKey(kind, id))?.state as S | undefined;
  }

  /** Resolves once no command is in flight. */
  drain(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops actors that have had nothing to do for `idleMs`; their state is rebuilt from the stream when next needed. */
  passivate(idleMs: number): number {
    const now = this.options.clock.now();
    let stopped = 0;
    for (const [key, cell] of this.cells) {
      if (cell.current !== null || cell.mailbox.length > 0 || now - cell.lastUsedMs < idleMs) continue;
      if (cell.sinceSnapshot > 0) this.snapshot(cell);
      cell.actor?.stop();
      this.cells.delete(key);
      stopped++;
    }
    return stopped;
  }

  /**
   * Replaces the in-memory state of every actor of `kind` that is between
   * turns with `fn(state)`: housekeeping (dropping what is past retention)
   * that must leave every decision unchanged. Returns how many changed.
   */
  compact<S>(kind: ActorKind, fn: (state: S) => S): number {
    let changed = 0;
    for (const cell of this.cells.values()) {
      if (cell.kind !== kind || cell.current !== null) continue;
      const next = fn(cell.state as S);
      if (next !== cell.state) {
        cell.state = next;
        changed++;
      }
    }
    return changed;
  }

  /** How many actors are in memory. */
  get activeActors(): number {
    return this.cells.size;
  }

  private notifyIdle(): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  private cellFor(kind: ActorKind, id: string): Cell {
    const key = cellKey(kind, id);
    let cell = this.cells.get(key);
    if (cell === undefined) {
      const logic = this.logics.get(kind);
      if (logic === undefined) throw new Error(`no actor logic registered for kind ${kind}`);
      cell = {
        logic,
        kind,
        id,
        subject: this.options.subjects.event(kind, id),
        state: logic.initialState(id),
        seq: 0,
        lastAtMs: 0,
        recent: new Map(),
        mailbox: [],
        current: null,
        lastUsedMs: this.options.clock.now(),
        actor: undefined,
        sinceSnapshot: 0,
        saving: false,
      };
      this.cells.set(key, cell);
      cell.actor = startTurnActor(cell, this);
    }
    return cell;
  }

  /** Saves the cell's state in the background; a failure only costs a longer replay later. */
  private snapshot(cell: Cell): void {
    const store = this.options.snapshots;
    if (store === undefined || cell.saving || cell.seq === 0) return;
    cell.saving = true;
    const taken = cell.sinceSnapshot;
    // The store encodes synchronously, so later turns cannot change what is saved.
    store
      .save(cell.kind, cell.id, {
        v: 1,
        seq: cell.seq,
        lastAtMs: cell.lastAtMs,
        state: cell.state,
        recent: [...cell.recent].map(([msgId, r]) => [msgId, r.reply, r.atMs] as const),
      })
      .then(
        () => (cell.sinceSnapshot -= taken),
        (err: Error) => this.options.logger.debug({ err, kind: cell.kind, id: cell.id }, "snapshot not saved"),
      )
      .finally(() => (cell.saving = false));
  }

  // ---- effects started by the turn machine ----

  hydrate(cell: Cell, send: (event: TurnEvent) => void): void {
    const store = this.options.snapshots;
    if (store === undefined) {
      this.catchUp(cell, send);
      return;
    }
    const { log, logger } = this.options;
    const decode = (messages: readonly StoredMessage[]) => messages.map((m) => decodeEvent(m.payload, m.seq, m.msgId));
    void (async () => {
      const snapshot = await store.load(cell.kind, cell.id).catch((err: Error) => {
        logger.debug({ err, kind: cell.kind, id: cell.id }, "snapshot not loaded; replaying the whole history");
        return undefined;
      });
      if (snapshot !== undefined) {
        // Trust it only if the stream still holds this actor's event at the snapshot's sequence.
        const tail = await log.readSubject(cell.subject, snapshot.seq);
        if (tail[0]?.seq === snapshot.seq) {
          cell.state = snapshot.state;
          cell.seq = snapshot.seq;
          cell.lastAtMs = snapshot.lastAtMs;
          for (const [msgId, reply, atMs] of snapshot.recent) cell.recent.set(msgId, { reply, atMs });
          send({ type: "CAUGHT_UP", entries: decode(tail.slice(1)) });
          return;
        }
        logger.warn({ kind: cell.kind, id: cell.id, seq: snapshot.seq }, "snapshot does not match the stream; replaying the whole history");
      }
      send({ type: "CAUGHT_UP", entries: decode(await log.readSubject(cell.subject, 1)) });
    })().catch((error: Error) => send({ type: "LOG_FAILED", error }));
  }

  catchUp(cell: Cell, send: (event: TurnEvent) => void): void {
    this.options.log.readSubject(cell.subject, cell.seq + 1).then(
      (messages) => send({ type: "CAUGHT_UP", entries: messages.map((m) => decodeEvent(m.payload, m.seq, m.msgId)) }),
      (error: Error) => send({ type: "LOG_FAILED", error }),
    );
  }

  apply(cell: Cell, entries: readonly HistoryEntry[]): void {
    const { logic } = cell;
    const current = cell.current;
    for (const entry of entries) {
      if (entry.seq <= cell.seq) continue;
      cell.state = logic.evolve(cell.state, entry);
      cell.seq = entry.seq;
      cell.sinceSnapshot++;
      if (isUnparsable(entry)) continue;
      const atMs = Date.parse(entry.event.at);
      if (atMs > cell.lastAtMs) cell.lastAtMs = atMs;
      const ownTurn = current !== null && entry.msgId === current.msgId;
      if (entry.event.requestId !== undefined || ownTurn) {
        const reply = logic.replyFor(cell.state, entry);
        if (entry.event.requestId !== undefined && entry.msgId !== undefined) remember(cell, entry.msgId, reply, atMs);
        if (ownTurn) current.found = { reply };
      }
    }
  }

  failAll(cell: Cell, error: Error): void {
    this.options.logger.warn({ err: error, kind: cell.kind, id: cell.id }, "actor could not read its history");
    const waiting = cell.mailbox.splice(0);
    for (const turn of waiting) turn.resolve(unavailable(`the event stream could not be read: ${error.message}`));
  }

  takeTurn(cell: Cell): void {
    cell.current = cell.mailbox.shift()!;
    const now = this.options.clock.now();
    cell.lastUsedMs = now;
    // Forget replies older than twice the window (slack for clock skew between
    // instances), but keep the latest few regardless, for durable commands
    // redelivered after an outage longer than the window.
    const horizon = now - 2 * this.options.dedupWindowMs;
    for (const [key, remembered] of cell.recent) {
      if (cell.recent.size <= KEEP_RECENT_REPLIES || remembered.atMs >= horizon) break;
      cell.recent.delete(key);
    }
  }

  decide(cell: Cell): void {
    const turn = cell.current!;
    turn.attempts++;
    const now = Math.max(this.options.clock.now(), cell.lastAtMs);
    turn.now = now;
    turn.event = undefined;
    if (turn.requestId !== undefined) {
      const remembered = cell.recent.get(turn.msgId);
      const since = turn.requestedAt ?? now - this.options.dedupWindowMs;
      if (remembered !== undefined && remembered.atMs >= since) {
        this.finish(cell, { ok: true, reply: remembered.reply });
        return;
      }
    }
    turn.decision = cell.logic.decide(cell.state, turn.command, now);
  }

  append(cell: Cell, send: (event: TurnEvent) => void): void {
    const turn = cell.current!;
    const decision = turn.decision!;
    if (decision.outcome !== "append") throw new Error("append without an event to append");
    if (turn.event === undefined) {
      const envelope: EventEnvelope = {
        type: decision.type,
        v: 1,
        at: new Date(turn.now).toISOString(),
        kind: cell.kind,
        id: cell.id,
        ...(turn.requestId === undefined ? {} : { requestId: turn.requestId }),
        data: decision.data,
      };
      turn.event = { envelope, payload: encodeEvent(envelope) };
    }
    this.options.log.append(cell.subject, turn.event.payload, { expectedLastSubjectSeq: cell.seq, msgId: turn.msgId }).then(
      (ack) => {
        // A duplicate of an event this actor already applied is this request's own earlier answer
        // (the stream's window outlasted ours, e.g. under clock skew): answer it again, as catching up cannot find it.
        const remembered = ack.duplicate && ack.seq <= cell.seq ? cell.recent.get(turn.msgId) : undefined;
        if (remembered !== undefined) turn.found = { reply: remembered.reply };
        send({ type: "APPENDED", seq: ack.seq, duplicate: ack.duplicate });
      },
      (error: Error) => {
        if (error instanceof WrongLastSequenceError) send({ type: "CONFLICT" });
        else if (error instanceof LogUnavailableError && error.ambiguous) send({ type: "UNCERTAIN" });
        else send({ type: "LOG_FAILED", error });
      },
    );
  }

  applyOwn(cell: Cell, seq: number): void {
    const turn = cell.current!;
    const recorded = { seq, event: turn.event!.envelope, msgId: turn.msgId };
    cell.state = cell.logic.evolve(cell.state, recorded);
    cell.seq = seq;
    cell.sinceSnapshot++;
    cell.lastAtMs = turn.now;
    const reply = cell.logic.replyFor(cell.state, recorded);
    if (turn.requestId !== undefined) remember(cell, turn.msgId, reply, turn.now);
    this.finish(cell, { ok: true, reply });
  }

  checkFresh(cell: Cell, send: (event: TurnEvent) => void): void {
    this.options.log.lastSubjectSeq(cell.subject).then(
      (last) => send({ type: last === cell.seq ? "FRESH" : "STALE" }),
      (error: Error) => send({ type: "LOG_FAILED", error }),
    );
  }

  answerDecision(cell: Cell): void {
    const decision = cell.current!.decision!;
    if (decision.outcome === "reply") this.finish(cell, { ok: true, reply: decision.reply });
    else if (decision.outcome === "reject") this.finish(cell, { ok: false, rejection: decision.rejection });
  }

  answerFromHistory(cell: Cell): void {
    this.finish(cell, { ok: true, reply: cell.current!.found!.reply });
  }

  answerUnavailable(cell: Cell, error?: Error): void {
    const turn = cell.current!;
    const why =
      error?.message ??
      (turn.uncertain >= 2 ? "the event stream did not acknowledge the append" : `gave up after ${turn.attempts} conflicting attempts`);
    this.options.logger.warn({ kind: cell.kind, id: cell.id, op: turn.command.op, attempts: turn.attempts, err: error }, `turn failed: ${why}`);
    this.finish(cell, unavailable(`the event stream could not be written in time: ${why}`));
  }

  ownEventRecorded(cell: Cell): boolean {
    return cell.current!.found !== undefined;
  }

  outOfAttempts(cell: Cell): boolean {
    const turn = cell.current!;
    return turn.uncertain >= 2 || turn.attempts >= this.maxAttempts;
  }

  private finish(cell: Cell, result: TurnResult): void {
    const turn = cell.current!;
    cell.current = null;
    turn.resolve(result);
    if (cell.sinceSnapshot >= this.snapshotEvery) this.snapshot(cell);
  }
}


/** Remembers a reply; re-inserting keeps the map in time order, which pruning relies on. */
function remember(cell: Cell, msgId: string, reply: unknown, atMs: number): void {
  cell.recent.delete(msgId);
  cell.recent.set(msgId, { reply, atMs });
}
