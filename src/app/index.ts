/** The application layer: commands that span actors or need ordering beyond one mailbox. */
export * from "./keyed-sequencer.ts";
export * from "./proxy-leasing.ts";
export * from "./route-placement.ts";
export * from "./idle-expiry.ts";
