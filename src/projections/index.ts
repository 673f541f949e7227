/** Pure folds of events into state, shared by actors, read endpoints and tools. */
export * from "./lock.ts";
export * from "./follower.ts";
export * from "./host.ts";
export * from "./host-table.ts";
export * from "./route.ts";
export * from "./route-table.ts";
export * from "./proxy.ts";
export * from "./proxy-read-model.ts";
