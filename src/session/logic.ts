/** The session actor's logic: XState `fromTransition` logic over the session decider and the session fold. */
import type { KindLogic } from "../actors/kind-logic.ts";
import { sessionEventSchemas, type SessionEvent } from "./events.ts";
import { eventTypesOf } from "../events/kind-events.ts";
import { evolveSession, initialSessionState, sessionView, type SessionState } from "./state.ts";
import { decideAndFold } from "../actors/kind-logic.ts";
import { fromXState, transitionSnapshotOf } from "../actors/kind-logic.ts";
import type { SessionCommand, SessionSettings } from "./commands.ts";
import { decideSession } from "./decide.ts";

/** The session actor logic under the server's TTL settings. */
export function sessionLogic(settings: SessionSettings): KindLogic<SessionState, SessionCommand, SessionEvent> {
  const logic: KindLogic<SessionState, SessionCommand, SessionEvent> = fromXState({
    kind: "session",
    // 2: snapshots keep XState's persisted snapshot of each state (src/actors/kind-logic.ts, persistence).
    // 3: ids decode exactly (a snapshot from an older fold may hold two ids under one key).
    // 4: snapshots keep each state, not XState's persisted snapshot around it (src/actors/kind-logic.ts, persistence).
    foldVersion: 4,
    logic: sessionMachineLogic(settings),
    snapshotOf: transitionSnapshotOf<SessionState>,
    initialState: initialSessionState,
    eventTypes: SESSION_EVENT_TYPES,
    replyFor: (state, recorded) => (recorded.event.type === "SessionClosed" ? {} : { session: sessionView(state) }),
    // An opening writes every field of the view, a closing answers nothing; any other reply reads the state.
    lateReply: {
      fits: (_state, recorded) => recorded.event.type === "SessionOpened" || recorded.event.type === "SessionClosed",
      render: (id, recorded) => {
        const event = recorded.event as SessionEvent;
        if (event.type !== "SessionOpened") return {};
        const d = event.data;
        return { session: { id, owner: d.owner, ttlMs: d.ttlMs, expiresAt: d.expiresAt } };
      },
    },
  });
  // Keepalive and close are the session holder's: bound to the principal that opened it.
  return {
    ...logic,
    holderOf: (state, command) => (state.opened && command.op !== "open" && command.op !== "get" ? (state.by ?? "") : undefined),
  };
}

/** The session's XState logic: `fromTransition` over its decider and fold. */
export function sessionMachineLogic(settings: SessionSettings) {
  return decideAndFold<SessionState, SessionCommand, SessionEvent>({
    decide: (state, command, now) => decideSession(state, command, now, settings),
    evolve: evolveSession,
    initialState: initialSessionState,
  });
}

const SESSION_EVENT_TYPES = eventTypesOf(sessionEventSchemas);
