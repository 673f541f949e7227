/**
 * What `leasehold serve` says about its NATS connection while it runs: one
 * line when it is lost and one when it is back (with how long it was away),
 * never a line per reconnect attempt.
 */
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "pino";

/** Logs the connection's losses and returns; the watch ends when the connection closes. */
export function watchConnection(nc: NatsConnection, logger: Logger, now: () => number = Date.now): void {
  void (async () => {
    let lostAt: number | undefined;
    for await (const status of nc.status()) {
      if (status.type === "disconnect" && lostAt === undefined) {
        lostAt = now();
        logger.warn(
          { server: status.server },
          "NATS connection lost; reconnecting (meanwhile commands that need the stream answer UNAVAILABLE)",
        );
      } else if (status.type === "reconnect" && lostAt !== undefined) {
        logger.warn({ server: status.server, awayMs: now() - lostAt }, "NATS connection back");
        lostAt = undefined;
      }
    }
  })();
}
