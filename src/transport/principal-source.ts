/**
 * Whether `Nats-Request-Info` can be the server's word where this service
 * runs. The server writes that header only on a request that crossed a
 * service import from another account; in the global account (`$G`, every
 * user of a server configured without accounts) nothing crosses one, so
 * every such header was written by a client claiming to be someone. The
 * service asks the server which account its connection is in
 * (`$SYS.REQ.USER.INFO`, answered for any user) before it takes principals
 * from the header, and refuses to start in `$G`.
 */
import type { NatsConnection } from "@nats-io/nats-core";

/** The account of a server configured without accounts, where no request crosses an import. */
export const GLOBAL_ACCOUNT = "$G";

/** `--principals nats-request-info` where the server cannot be the header's author. */
export class PrincipalSourceError extends Error {
  override readonly name = "PrincipalSourceError";
}

/** The account `nc` is in, as the server says; undefined when it does not say within `timeoutMs` (or this user may not ask). */
export async function accountOf(nc: NatsConnection, timeoutMs: number): Promise<string | undefined> {
  try {
    const reply = await nc.request("$SYS.REQ.USER.INFO", "", { timeout: timeoutMs });
    const account = (reply.json<{ data?: { account?: unknown } }>().data ?? {}).account;
    return typeof account === "string" && account !== "" ? account : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Throws {@link PrincipalSourceError} when `account` is the global account;
 * returns a warning to log when the account is not known (the header is then
 * trusted as the operator configured), else undefined.
 */
export function principalSourceProblem(account: string | undefined): string | undefined {
  if (account === GLOBAL_ACCOUNT) {
    throw new PrincipalSourceError(
      "--principals nats-request-info: this connection is in the global account ($G), where no request crosses a service import, " +
        "so every Nats-Request-Info header is one a client wrote; run on the account layout (leasehold nats-config --layout accounts)",
    );
  }
  return account === undefined
    ? "could not learn this connection's account ($SYS.REQ.USER.INFO did not answer): Nats-Request-Info is trusted as --principals says; " +
        "it is the server's only where every client request crosses a service import"
    : undefined;
}
