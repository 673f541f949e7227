/**
 * What the runtime needs to know about one kind of actor: its fold (initial
 * state, evolve, fold version, and how to answer a command from the event it
 * recorded — also a repeated `requestId`'s answer) and its pure decider.
 */
import type { EventEnvelope } from "../events/envelope.ts";
import type { KindFold } from "../projections/kind-fold.ts";
import type { Decision } from "./decision.ts";

/** A command as the runtime sees it: an operation name plus its fields. */
export interface Command {
  readonly op: string;
}

/** The pure parts of one kind of actor; `E` is the kind's event union. */
export interface ActorLogic<State, Cmd extends Command, E extends EventEnvelope = EventEnvelope> extends KindFold<State> {
  /** Decides one command at instant `now` (epoch ms). */
  decide(state: State, command: Cmd, now: number): Decision<E>;
  /**
   * Whether `reply`, remembered for the command's `requestId`, answers this
   * repeat of it (default: always); a reply that only says where a wait
   * stands does not answer a repeat that may not wait, which is decided.
   */
  answersRepeat?(reply: unknown, command: Cmd): boolean;
  /**
   * For a holder-bound command (docs/protocol.md, "Principals"), the
   * principal that created the lease or session it acts on (`""`: created
   * without one); undefined for any other command, or when there is nothing
   * to act on.
   */
  holderOf?(state: State, command: Cmd, now: number): string | undefined;
}
