/** What each kind of actor is: its commands, and its XState logic that decides them and folds its events. */
export * from "./decision.ts";
export * from "./actor-logic.ts";
export * from "./lock/index.ts";
export * from "./host/index.ts";
export * from "./route/index.ts";
export * from "./proxy/index.ts";
export * from "./diagram.ts";
export * from "./flat-machine.ts";
export * from "./kind-logic.ts";
export * from "./data-logic.ts";
export * from "./session/index.ts";
