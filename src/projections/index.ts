/** Pure folds of events into state, shared by actors, read endpoints and tools. */
export * from "./lock.ts";
export * from "./follower.ts";
