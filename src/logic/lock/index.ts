/** Locks: distributed leases with owner, TTL under a ceiling, etag CAS and a fencing generation. */
export * from "./commands.ts";
export * from "./decide.ts";
export * from "./logic.ts";
export * from "./waiting-reply.ts";
export * from "./machine.ts";
