/** Hosts: the health and draining flags route placement consults. */
export * from "./commands.ts";
export * from "./decide.ts";
export * from "./logic.ts";
