/** The operator tools (replay, audit, tail, status) as testable functions; src/cli prints what they return. */
export * from "./errors.ts";
export * from "./time.ts";
export * from "./table.ts";
export * from "./stream-fold.ts";
export * from "./replay.ts";
export * from "./replay-render.ts";
export * from "./audit.ts";
export * from "./tail.ts";
export * from "./status.ts";
export * from "./connect.ts";
export * from "./stream-reader.ts";
export * from "./worker-read.ts";
