/** The actor runtime: a mailbox per id, each command's turn as plain bounded code, and the bound on every turn. */
export * from "./turn-result.ts";
export * from "./clock.ts";
export * from "./command-turn.ts";
export * from "./turn-deadlines.ts";
export * from "./actor-runtime.ts";
