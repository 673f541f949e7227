/**
 * Who sent a request (docs/protocol.md, "Principals"): never what the request
 * claims, only what the NATS server wrote. A request that crossed a service
 * import carries `Nats-Request-Info`, JSON the server writes with the
 * importing account (`acc`) and, when the import shares it, the user; its
 * principal is `<acc>/<user>` or `<acc>`. The service reads that header only
 * when told its deployment routes every request through such an import
 * (`--principals nats-request-info`): elsewhere a header of that name was
 * written by the client, and every principal is `""` (unknown).
 */
import { Match, type MsgHdrs } from "@nats-io/nats-core";

/** Where a request's principal comes from: nowhere (`off`), or the server's `Nats-Request-Info` header. */
export type PrincipalSource = "off" | "nats-request-info";

/** The header the NATS server adds to a request that crosses a service import. */
export const REQUEST_INFO_HEADER = "Nats-Request-Info";

/** The principal of a request with `headers`, from `source`; `""` when unknown. */
export function principalOf(headers: MsgHdrs | undefined, source: PrincipalSource): string {
  if (source === "off" || headers === undefined) return "";
  // The server writes one copy, after taking out one the client wrote: any other copy (in any letter case) is
  // the client's, and may stand before the server's. Such a request names no one.
  const copies = headers.values(REQUEST_INFO_HEADER, Match.IgnoreCase);
  if (copies.length !== 1) return "";
  const info = copies[0]!;
  if (info === "") return "";
  let parsed: unknown;
  try {
    parsed = JSON.parse(info);
  } catch {
    return "";
  }
  if (parsed === null || typeof parsed !== "object") return "";
  const { acc, user } = parsed as { acc?: unknown; user?: unknown };
  if (typeof acc !== "string" || acc === "") return "";
  return typeof user === "string" && user !== "" ? `${acc}/${user}` : acc;
}
