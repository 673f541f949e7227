/** Proxies: leases on egress proxies with capacity, least-loaded selection, cooldowns and retention. */
export * from "./commands.ts";
export * from "./decide.ts";
export * from "./logic.ts";
export * from "./select.ts";
