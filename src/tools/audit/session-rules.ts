/** The audit's session rules: a session is opened once, and nothing keeps or closes it once it has ended. */
import { isSessionEvent } from "../../session/events.ts";
import type { SessionState } from "../../session/state.ts";
import { sessionLiveAt } from "../../session/state.ts";
import { iso } from "../time.ts";
import type { KindRules } from "./kind-rules.ts";

const RULES = {
  "session-after-end":
    "a session is opened once, and kept alive or closed only while live: an ended session (closed, or its expiresAt passed) never comes back",
} as const;

/** Session rules; locks acquired under an ended session are the lock rules' to find. */
export const sessionRules: KindRules<keyof typeof RULES> = {
  kind: "session",
  rules: RULES,
  checker: () => ({
    check(event, _id, state, { atMs }, report) {
      if (!isSessionEvent(event)) return;
      const before = state as SessionState;
      if (event.type === "SessionOpened") {
        if (before.opened) report("session-after-end", `opened again at ${iso(atMs)}`);
      } else if (!sessionLiveAt(before, atMs)) {
        report("session-after-end", `${event.type} at ${iso(atMs)} of a session that ${before.opened ? "had ended" : "was never opened"}`);
      }
    },
  }),
};
