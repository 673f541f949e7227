/** Actors: deciders per kind, the turn machine, and the runtime that runs them. */
export * from "./decision.ts";
export * from "./actor-logic.ts";
export * from "./turn-result.ts";
export * from "./clock.ts";
export * from "./command-turn.ts";
export * from "./turn-deadlines.ts";
export * from "./actor-runtime.ts";
export * from "./lock/index.ts";
export * from "./host/index.ts";
export * from "./route/index.ts";
export * from "./proxy/index.ts";
