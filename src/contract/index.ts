/**
 * The wire contract as code, shared by the server's api and the client (and
 * importing nothing else of the project): error codes and statuses, the
 * error body, subjects and stream names, request and reply types.
 */
export * from "./errors.ts";
export * from "./subjects.ts";
export * from "./subjects.ts";
export * from "./lock-event-wire.ts";
export * from "./route-choosers.ts";
export * from "./host-load.ts";
export type * from "./messages.ts";
