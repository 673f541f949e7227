/**
 * The whole stream folded into every actor's state, with each kind's logic
 * as the service's actors and projections run it, so replay and audit cannot
 * disagree with the service about what a history means.
 */
import { isUnparsable, type HistoryEntry } from "../events/envelope.ts";
import { decodeEvent } from "../events/decode.ts";
import { type StoredMessage } from "../events/event-log.ts";
import { ACTOR_KINDS, type ActorKind, type Subjects } from "../contract/subjects.ts";
import { decodeToken } from "../contract/subjects.ts";
import type { KindFold } from "../projections/kind-fold.ts";
import type { HostState } from "../host/state.ts";
import type { LockState } from "../lock/state.ts";
import type { ProxyState } from "../proxy/state.ts";
import type { RouteState } from "../route/state.ts";
import type { SessionState } from "../session/state.ts";
import { kindFolds } from "../service/kind-folds.ts";
import { DEFAULTS } from "../config.ts";

/** Each kind's fold, with the defaults completing the logic's arguments (folding reads no setting: src/service/kind-folds.ts). */
export const KIND_FOLDS = kindFolds(DEFAULTS);

/** How many subjects' actors {@link StreamFold.actorOf} remembers at most. */
const MAX_REMEMBERED_SUBJECTS = 100_000;

/** The state type of one kind. */
export type StateOf<K extends ActorKind> = ReturnType<(typeof KIND_FOLDS)[K]["initialState"]>;

/** Every folded actor, by kind and id. */
export interface KindStates {
  readonly lock: Map<string, LockState>;
  readonly proxy: Map<string, ProxyState>;
  readonly host: Map<string, HostState>;
  readonly route: Map<string, RouteState>;
  readonly session: Map<string, SessionState>;
}

/** The actor a subject belongs to. */
export interface ActorRef {
  readonly kind: ActorKind;
  readonly id: string;
}

/** The actor of `<prefix>.events.<kind>.<token>`, or null when the subject is not one leasehold writes. */
export function actorOfSubject(subjects: Subjects, subject: string): ActorRef | null {
  const head = `${subjects.prefix}.events.`;
  if (!subject.startsWith(head)) return null;
  const rest = subject.slice(head.length);
  const dot = rest.indexOf(".");
  if (dot < 0) return null;
  const kind = rest.slice(0, dot) as ActorKind;
  const token = rest.slice(dot + 1);
  if (!ACTOR_KINDS.includes(kind) || token.includes(".")) return null;
  try {
    return { kind, id: decodeToken(token) };
  } catch {
    return null;
  }
}

/** One message as the fold saw it. */
export interface FoldedMessage {
  readonly message: StoredMessage;
  /** The actor of its subject; null when the subject is not one leasehold writes (then nothing was folded). */
  readonly actor: ActorRef | null;
  readonly entry: HistoryEntry;
}

/** Folds messages, in stream order, into every actor's state. */
export class StreamFold {
  readonly states: KindStates = { lock: new Map(), proxy: new Map(), host: new Map(), route: new Map(), session: new Map() };
  /** The last sequence folded (0 before any). */
  seq = 0;
  /** The stored time of the last message folded (epoch ms; 0 before any). */
  time = 0;
  /** How many messages were folded. */
  messages = 0;

  private readonly actors = new Map<string, ActorRef | null>();

  constructor(readonly subjects: Subjects) {}

  /** The state of one actor (its initial state when it has no history). */
  get<K extends ActorKind>(kind: K, id: string): StateOf<K> {
    const map = this.states[kind] as Map<string, StateOf<K>>;
    return map.get(id) ?? (KIND_FOLDS[kind].initialState(id) as StateOf<K>);
  }

  /** Replaces one actor's state (the audit prunes what can never matter again). */
  set<K extends ActorKind>(kind: K, id: string, state: StateOf<K>): void {
    (this.states[kind] as Map<string, StateOf<K>>).set(id, state);
  }

  /** The actor of a subject (null when it is not one leasehold writes), remembered: a stream has far fewer subjects than messages. */
  actorOf(subject: string): ActorRef | null {
    let actor = this.actors.get(subject);
    if (actor === undefined) {
      actor = actorOfSubject(this.subjects, subject);
      // Bounded: a stream of mostly one-off subjects must not grow this without end.
      if (this.actors.size >= MAX_REMEMBERED_SUBJECTS) this.actors.clear();
      this.actors.set(subject, actor);
    }
    return actor;
  }

  /** Decodes one message and folds it into its actor's state. */
  apply(message: StoredMessage): FoldedMessage {
    const actor = this.actorOf(message.subject);
    return { message, actor, entry: this.applyTo(message, actor) };
  }

  /**
   * Decodes one message and folds it into the state of `actor` (its
   * subject's, from {@link actorOf}); returns the decoded entry. The tools'
   * per-message path: no object besides the entry and the new state.
   */
  applyTo(message: StoredMessage, actor: ActorRef | null): HistoryEntry {
    const entry = decodeEvent(message.payload, message.seq, message.msgId);
    // An event whose envelope names another entity is not its subject's (the audit's `envelope` rule reports it).
    if (actor !== null && (isUnparsable(entry) || (entry.event.kind === actor.kind && entry.event.id === actor.id))) {
      const states = this.states[actor.kind] as Map<string, unknown>;
      const fold = KIND_FOLDS[actor.kind] as Pick<KindFold<unknown>, "evolve" | "initialState">;
      states.set(actor.id, fold.evolve(states.get(actor.id) ?? fold.initialState(actor.id), entry));
    }
    this.seq = message.seq;
    this.time = message.time;
    this.messages++;
    return entry;
  }
}
