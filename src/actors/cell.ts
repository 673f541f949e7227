/**
 * The in-memory home of one active actor: its folded state, the last stream
 * sequence it has seen on its subject, its mailbox and the turn in progress.
 */
import type { ActorKind, EventEnvelope, HistoryEntry } from "../events/index.ts";
import type { ActorLogic, Command } from "./actor-logic.ts";
import type { Decision, Rejection } from "./decision.ts";
import type { TurnActor, TurnEvent } from "./turn-machine.ts";

/** How a turn ended: a reply, or a refusal to send as a contract error. */
export type TurnResult =
  | { readonly ok: true; readonly reply: unknown }
  | { readonly ok: false; readonly rejection: Rejection };

/** One command waiting for, or taking, its turn. */
export interface Turn {
  readonly command: Command;
  readonly requestId: string | undefined;
  /** When a durable command was first sent (epoch ms); see ActorHost.execute. */
  readonly requestedAt: number | undefined;
  /** `Nats-Msg-Id` of the event this turn may append (stable across retries). */
  readonly msgId: string;
  readonly resolve: (result: TurnResult) => void;
  decision: Decision | undefined;
  /** The instant the current decision was taken at. */
  now: number;
  /** The event of the current decision and its encoding (kept so a retry sends the same bytes). */
  event: { readonly envelope: EventEnvelope; readonly payload: Uint8Array } | undefined;
  attempts: number;
  /** How many appends ended without knowing whether they were stored. */
  uncertain: number;
  /** The reply owed, when catching up found this turn's own event in the stream. */
  found: { reply: unknown } | undefined;
}

/** A reply remembered for a `requestId`, so a repeat is answered without deciding again. */
export interface RememberedReply {
  readonly reply: unknown;
  readonly atMs: number;
}

/** One active actor. */
export interface Cell {
  readonly logic: ActorLogic<unknown, Command>;
  readonly kind: ActorKind;
  readonly id: string;
  readonly subject: string;
  state: unknown;
  /** Last stream sequence applied from this actor's subject (0: none). */
  seq: number;
  /** The latest event instant applied, so `at` never goes back along the subject. */
  lastAtMs: number;
  /** Replies of recent commands that carried a `requestId`, by message id, oldest first. */
  readonly recent: Map<string, RememberedReply>;
  readonly mailbox: Turn[];
  current: Turn | null;
  lastUsedMs: number;
  actor: TurnActor | undefined;
  /** Events applied since the last snapshot was taken (or since activation). */
  sinceSnapshot: number;
  /** A snapshot save is in flight (at most one per actor). */
  saving: boolean;
}

/** The effects the turn machine starts; implemented by the actor host. */
export interface TurnEffects {
  hydrate(cell: Cell, send: (event: TurnEvent) => void): void;
  catchUp(cell: Cell, send: (event: TurnEvent) => void): void;
  apply(cell: Cell, entries: readonly HistoryEntry[]): void;
  failAll(cell: Cell, error: Error): void;
  takeTurn(cell: Cell): void;
  decide(cell: Cell): void;
  append(cell: Cell, send: (event: TurnEvent) => void): void;
  applyOwn(cell: Cell, seq: number): void;
  checkFresh(cell: Cell, send: (event: TurnEvent) => void): void;
  answerDecision(cell: Cell): void;
  answerFromHistory(cell: Cell): void;
  answerUnavailable(cell: Cell, error?: Error): void;
  ownEventRecorded(cell: Cell): boolean;
  outOfAttempts(cell: Cell): boolean;
}
