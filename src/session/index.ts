/** What other kinds may use of sessions: a lock reads whether its session is live and wires the session endpoints beside its own. */
export { sessionEndMs, sessionLiveAt, type CloseLog, type SessionLookup, type SessionState } from "./state.ts";
export { SessionTable } from "./table.ts";
export { sessionLogic } from "./logic.ts";
export { sessionEndpoints } from "./endpoints.ts";
