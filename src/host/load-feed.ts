/**
 * Host loads from the wire: every instance subscribes, with no queue group,
 * to `<prefix>.loads.>` and hands each message to its {@link HostLoads}
 * table. A core NATS subscription with a callback: the client subscribes it
 * again after a reconnect by itself, and there is no iterator to end or wedge.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "pino";
import type { Subjects } from "../contract/subjects.ts";
import type { HostLoads } from "./loads.ts";

/** Largest host name, UTF-8 bytes (as every identifier of the contract). */
const MAX_HOST_BYTES = 256;

/** Feeds `loads` from every host's load subject until stopped. */
export function followHostLoads(nc: NatsConnection, subjects: Subjects, loads: HostLoads, logger: Logger): { stop(): void } {
  let warned = false;
  const subscription = nc.subscribe(subjects.allLoads, {
    callback: (err, msg) => {
      if (err !== null) {
        // E.g. a server whose permissions leave out the load subjects: the least-load chooser then sees every load unknown.
        if (!warned) logger.warn({ err, subject: subjects.allLoads }, "cannot receive host loads; every load counts as unknown");
        warned = true;
        return;
      }
      const host = subjects.hostOfLoad(msg.subject);
      if (host === undefined || Buffer.byteLength(host, "utf8") > MAX_HOST_BYTES) return;
      loads.report(host, msg.data);
    },
  });
  return { stop: () => subscription.unsubscribe() };
}
