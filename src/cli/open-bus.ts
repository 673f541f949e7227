/**
 * The warning `serve` gives when it joins a NATS server off this machine
 * with no credentials: then anyone who can reach that server can publish to
 * the event stream, answer the service's requests or read every lease, and
 * nothing the service checks can stop them (docs/operations.md, "Security
 * model").
 */
import type { NatsTarget } from "./connection-options.ts";

/** Whether `server` (`nats://host:port`, `host:port` or `host`) names this machine. */
export function isLoopback(server: string): boolean {
  let host: string;
  try {
    host = new URL(server.includes("://") ? server : `nats://${server}`).hostname;
  } catch {
    return false;
  }
  host = host.replace(/^\[|\]$/g, "").toLowerCase();
  return host === "localhost" || host === "::1" || /^127(\.\d{1,3}){3}$/.test(host);
}

/** The warning for `target`, or undefined when it carries credentials or every server is on loopback. */
export function openBusWarning(target: Pick<NatsTarget, "servers" | "auth">): string | undefined {
  const { authenticator, user, token } = target.auth;
  if (authenticator !== undefined || user !== undefined || token !== undefined) return undefined;
  const remote = target.servers.filter((s) => !isLoopback(s));
  if (remote.length === 0) return undefined;
  return (
    `connected to ${remote.join(", ")} without credentials: whoever reaches that server can write the event stream ` +
    "and answer or read every request; give --creds or --user/--password (docs/operations.md, Security model)"
  );
}
