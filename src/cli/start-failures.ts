/**
 * The conditions a `leasehold serve` start commonly meets on someone's NATS,
 * each turned into one line with the fix instead of an "unexpected failure":
 * a server (or account) without JetStream, and a user without the service's
 * permissions.
 */
import { join } from "node:path";
import { DEFAULTS } from "../config.ts";
import { ConnectFailure, UsageError } from "./cli-errors.ts";
import { PrincipalSourceError } from "../transport/principal-source.ts";
import { APPEND_PASSWORD_FILE, APPEND_USER, PASSWORD_FILE, SERVICE_USER } from "./local-nats.ts";

/** What the start was doing: where it connected, as whom and for which prefix. */
export interface StartContext {
  /** The NATS URL(s) as shown to the user. */
  readonly where: string;
  readonly prefix: string;
  /** `--data-dir`, whose service-password lets an instance join the local server. */
  readonly dataDir: string;
  /** Whether serve started its own nats-server (the shipped nats.conf). */
  readonly localServer: boolean;
}

/** `error` as a one-line ConnectFailure with the fix when it is a known condition, else `error` itself. */
export function explainStartFailure(error: unknown, context: StartContext): unknown {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof PrincipalSourceError) return new UsageError(message, { cause: error });
  if (/jetstream (is )?not enabled/i.test(message)) {
    return new ConnectFailure(
      `NATS at ${context.where} has no JetStream for this user's account: start nats-server with -js, or give the account ` +
        "`jetstream: enabled` (leasehold nats-config writes such a configuration)",
      { cause: error },
    );
  }
  const denied = /Permissions Violation for (Publish|Subscription) to "([^"]+)"/.exec(message);
  if (denied === null || denied[2]!.startsWith("_INBOX")) return error;
  const verb = denied[1] === "Publish" ? "publish to" : "subscribe to";
  const fix = context.localServer
    ? `the local nats-server's nats.conf serves the prefix ${DEFAULTS.prefix} only: run another prefix on a server configured by \`leasehold nats-config --prefix ${context.prefix} --out <file>\``
    : `connect as the service's two users: on the nats-server of a \`leasehold serve\`, LEASEHOLD_USER=${SERVICE_USER} LEASEHOLD_PASSWORD="$(cat ${join(context.dataDir, PASSWORD_FILE)})" ` +
      `LEASEHOLD_APPEND_USER=${APPEND_USER} LEASEHOLD_APPEND_PASSWORD="$(cat ${join(context.dataDir, APPEND_PASSWORD_FILE)})"; ` +
      `elsewhere the two service users \`leasehold nats-config --prefix ${context.prefix}\` writes (the second one with --append-user/--append-password or --append-creds)`;
  return new ConnectFailure(`this NATS user may not ${verb} ${denied[2]}, which the service needs: ${fix}`, { cause: error });
}
