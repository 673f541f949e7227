/**
 * What a kind projection is made of, as plain types: the kind's pure fold,
 * the record it keeps per id, and the hooks read models attach to it.
 */
import type { HistoryEntry, RecordedEvent } from "../events/envelope.ts";
import type { ActorKind } from "../contract/subjects.ts";

/** The pure parts of a kind that a projection needs. */
export interface KindFold<State> {
  readonly kind: ActorKind;
  /** Bumped whenever `evolve` changes what a history means: snapshots of another version are ignored. */
  readonly foldVersion: number;
  /** The state of an id with no history. */
  initialState(id: string): State;
  /** Applies one history entry (including messages that did not parse). */
  evolve(state: State, entry: HistoryEntry): State;
  /** The reply owed to the command that recorded `recorded`, given the state right after it. */
  replyFor(state: State, recorded: RecordedEvent): unknown;
  /**
   * Replies a fold may render later, from the event and its id alone: a fold
   * remembers where such an event is, and the reply is made only if a retry
   * asks (most never do). Without it, every reply is made as its event folds.
   */
  readonly lateReply?: LateReply<State>;
  /**
   * The extras (see {@link SnapshotExtra}) a fold away from the projection
   * (a start's backlog worker) builds, by name, as the projection's own
   * extras of those names would from the same entries. A start folds a
   * kind's backlog on the worker only when each of its extras has one here.
   */
  readonly backlogExtras?: Readonly<Record<string, () => BacklogExtra>>;
  /** A state as a snapshot keeps it (default: as it is); V8's serialization keeps plain data, Maps and Sets. */
  serializeState?(state: State): unknown;
  /** A state as a snapshot gives it back, made whole again (default: as it is; it may be changed in place: it was decoded for this call); V8's serialization keeps no classes. */
  reviveState?(state: State): State;
}

/** How a kind renders a reply from its event and id, where the state after the event adds nothing to it. */
export interface LateReply<State> {
  /** Whether {@link render} of `recorded` gives what `replyFor(stateAfter, recorded)` gives. */
  fits(stateAfter: State, recorded: RecordedEvent): boolean;
  /** The reply owed to `recorded`, an event of `id` that {@link fits}. */
  render(id: string, recorded: RecordedEvent): unknown;
}

/** One id's folded state and where in the stream it stands. */
export interface ProjectionRecord<State> {
  readonly state: State;
  /** The stream sequence of the id's last event (0: none); an append expects it. */
  readonly seq: number;
  /** The latest event instant of the id (epoch ms), so `at` never goes back along its subject. */
  readonly atMs: number;
}

/** Called after each entry is folded, by the follower or by an actor's own append (indexes hook in here). */
export type FoldListener<State> = (id: string, state: State, entry: HistoryEntry) => void;

/** An extra built from the folded entries alone: what its {@link SnapshotExtra.save} would give. */
export interface BacklogExtra {
  fold(id: string, entry: HistoryEntry): void;
  save(): unknown;
}

/** Data a read model keeps beside the states that cannot be derived from them, saved in the projection's snapshots. */
export interface SnapshotExtra {
  save(): unknown;
  restore(data: unknown): void;
}
