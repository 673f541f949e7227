/**
 * The session table: every session's state as the session events say, kept
 * current by the session {@link KindProjection}; the sessions lock decisions
 * read (src/lock/session-waiters.ts), and the locks each holds.
 */
import type { KindProjection } from "../projections/kind-projection.ts";
import { ProjectedReadModel } from "../projections/read-model.ts";
import { compareCodeUnits } from "../contract/code-units.ts";
import type { SessionLookup, SessionState } from "./state.ts";
import { SessionCloseLog } from "./close-log.ts";

/** Follows the session events of one prefix, and the session leases of the lock events. */
export class SessionTable<Lock = unknown> extends ProjectedReadModel<SessionState> implements SessionLookup {
  /** Locks whose lease hangs on each session while the lock's history does not know the session's end. */
  private readonly held = new Map<string, Set<string>>();
  /** The session each such lock's lease hangs on. */
  private readonly sessionOfLock = new Map<string, string>();
  private readonly endListeners: ((id: string) => void)[] = [];
  /** The sessions closed, in fold order: how a lock's reading of its session waiters learns of an end brought forward. */
  readonly closes = new SessionCloseLog();

  /**
   * `sessionHolding` names the session a lock's lease hangs on while the
   * lock's history does not know the session's end (the lock kind says; it
   * sits above sessions).
   */
  /** Has any session ever been opened (as far as this instance has folded)? A field, read on every lock request. */
  inUse = false;

  /**
   * `sessionHolding` names the session a lock's lease hangs on while the
   * lock's history does not know the session's end (the lock kind says; it
   * sits above sessions).
   */
  constructor(
    projection: KindProjection<SessionState>,
    private readonly locks: KindProjection<Lock>,
    private readonly sessionHolding: (lock: Lock) => string | undefined,
  ) {
    super(projection);
    projection.onFold((id, state) => {
      this.watchLocks();
      if (state.closedAtMs === null) return;
      this.closes.closed(id);
      for (const listener of this.endListeners) listener(id);
    });
    projection.onRestore(() => {
      this.closes.reset();
      if (projection.size > 0) this.watchLocks();
    });
  }

  /**
   * Follows the locks for the sessions their leases hang on, from the first
   * session on: before any session exists no lease can hang on one, and a
   * lock's fold runs nothing here. Locks folded before are read once, as
   * they stand.
   */
  private watchLocks(): void {
    if (this.inUse) return;
    this.inUse = true;
    const readAll = (): void => {
      this.held.clear();
      this.sessionOfLock.clear();
      for (const [name, state] of this.locks.entries()) this.noteLock(name, state);
    };
    readAll();
    this.locks.onRestore(readAll);
    this.locks.onFold((name, state) => this.noteLock(name, state));
  }

  /** The session's state; undefined when it was never opened. */
  get(id: string): SessionState | undefined {
    const state = this.projection.get(id);
    return state.opened ? state : undefined;
  }

  /** Calls `listener` with a session's id when a close of it is folded (its locks are free from then). */
  onClose(listener: (id: string) => void): void {
    this.endListeners.push(listener);
  }

  /** The locks a live session holds, sorted. */
  locksOf(id: string): string[] {
    return [...(this.held.get(id) ?? [])].sort(compareCodeUnits);
  }

  private noteLock(name: string, state: Lock): void {
    const session = this.sessionHolding(state);
    const before = this.sessionOfLock.get(name);
    if (before === session) return;
    if (before !== undefined) {
      const set = this.held.get(before)!;
      set.delete(name);
      if (set.size === 0) this.held.delete(before);
    }
    if (session === undefined) {
      this.sessionOfLock.delete(name);
      return;
    }
    this.sessionOfLock.set(name, session);
    let set = this.held.get(session);
    if (set === undefined) this.held.set(session, (set = new Set()));
    set.add(name);
  }
}
