/**
 * What the actor host needs to know about one kind of actor: its pure fold
 * (initial state and evolve), its pure decider, and how to answer a command
 * from the event it recorded (also used to answer a repeated `requestId`).
 */
import type { ActorKind, HistoryEntry, RecordedEvent } from "../events/index.ts";
import type { Decision } from "./decision.ts";

/** A command as the host sees it: an operation name plus its fields. */
export interface Command {
  readonly op: string;
}

/** The pure parts of one kind of actor. */
export interface ActorLogic<State, Cmd extends Command> {
  readonly kind: ActorKind;
  /** The state of an actor with no history. */
  initialState(id: string): State;
  /** Applies one history entry (including messages that did not parse). */
  evolve(state: State, entry: HistoryEntry): State;
  /** Decides one command at instant `now` (epoch ms). */
  decide(state: State, command: Cmd, now: number): Decision;
  /** The reply owed to the command that recorded `recorded`, given the state right after it. */
  replyFor(state: State, recorded: RecordedEvent): unknown;
}
