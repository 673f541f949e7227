/** Sessions: leases that lock leases hang on (1.2). */
export * from "./commands.ts";
export * from "./decide.ts";
export * from "./logic.ts";
