/**
 * What a long-running command (`leasehold serve`, `host-load`) says about
 * its NATS connection while it runs: one line when it is lost and one when it
 * is back (with how long it was away), never a line per reconnect attempt.
 */
import type { NatsConnection } from "@nats-io/nats-core";

/** What to say when the connection goes and when it is back. */
export interface ConnectionNotes {
  lost(server: string): void;
  back(server: string, awayMs: number): void;
}

/** Reports the connection's losses to `notes` and returns; the watch ends when the connection closes. */
export function watchConnection(nc: NatsConnection, notes: ConnectionNotes, now: () => number = Date.now): void {
  void (async () => {
    let lostAt: number | undefined;
    for await (const status of nc.status()) {
      if (status.type === "disconnect" && lostAt === undefined) {
        lostAt = now();
        notes.lost(status.server);
      } else if (status.type === "reconnect" && lostAt !== undefined) {
        notes.back(status.server, now() - lostAt);
        lostAt = undefined;
      }
    }
  })();
}
