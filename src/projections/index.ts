/** The read side: pure folds of events into state, the kind projections that follow the stream and keep them (with their snapshots and remembered replies), and the read models and indexes over them. */
export * from "./lock.ts";
export * from "./batched-catch-up.ts";
export * from "./kind-projection.ts";
export * from "./projection-snapshots.ts";
export * from "./legacy-snapshots.ts";
export * from "./snapshot-stores.ts";
export * from "./incremental-snapshots.ts";
export * from "./read-model.ts";
export * from "./reply-memory.ts";
export * from "./host.ts";
export * from "./host-table.ts";
export * from "./lease-map.ts";
export * from "./route.ts";
export * from "./route-table.ts";
export * from "./proxy.ts";
export * from "./proxy-read-model.ts";
export * from "./session.ts";
