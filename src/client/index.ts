/** The typed client of docs/protocol.md: requests, durable commands, errors, the lock keeper, the session keeper, the proxy lease helper and host loads. */
export * from "../contract/messages.ts";
export * from "./errors.ts";
export * from "./transport.ts";
export * from "./client.ts";
export * from "./durable.ts";
export * from "./lock-keeper.ts";
export * from "./session-keeper.ts";
export * from "./lock-watch.ts";
export * from "./election.ts";
export * from "./proxy-lease.ts";
export * from "./host-load.ts";
