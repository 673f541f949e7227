/** Routes: sticky placement of conversations `(route, fp, model)` on hosts, with pins and idle expiry. */
export * from "./chooser.ts";
export * from "./commands.ts";
export * from "./decide.ts";
export * from "./logic.ts";
