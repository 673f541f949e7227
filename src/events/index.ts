/** The vocabulary (events, subjects, tokens) and the log that stores it. */
export * from "./envelope.ts";
export * from "./fields.ts";
export * from "./lock-events.ts";
export * from "./event-log.ts";
export * from "./deadline.ts";
export * from "./memory-event-log.ts";
export * from "./jetstream-event-log.ts";
export * from "./proxy-events.ts";
export * from "./host-events.ts";
export * from "./route-events.ts";
export * from "./session-events.ts";
export * from "./instant.ts";
export * from "./stored-time.ts";
export * from "./store-space.ts";
export * from "./leader-lease.ts";
