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
import { headerValues, type HeaderBlock, type UnreadHeaders } from "./client-text.ts";

/** Where a request's principal comes from: nowhere (`off`), or the server's `Nats-Request-Info` header. */
export type PrincipalSource = "off" | "nats-request-info";

/** The header the NATS server adds to a request that crosses a service import. */
export const REQUEST_INFO_HEADER = "Nats-Request-Info";

/** The principal of a request with the header block `headers` (src/transport/client-text.ts), from `source`; `""` when unknown. */
export function principalOf(headers: HeaderBlock | UnreadHeaders | undefined, source: PrincipalSource): string {
  if (source === "off" || headers === undefined || "unread" in headers) return "";
  // The server takes out one copy the client wrote, spelled exactly so, and adds its own at the end of the block,
  // as if the block ended as the protocol says. Any other copy, in any letter case and anywhere in the block (in a
  // value the server's line was run into, when the client left off the block's last line), is the client's, and
  // may stand before the server's: such a request names no one.
  if (occurrences(headers.text.toLowerCase(), REQUEST_INFO_HEADER.toLowerCase()) !== 1) return "";
  const copies = headerValues(headers, REQUEST_INFO_HEADER);
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

/** How many times `part` occurs in `text`. */
function occurrences(text: string, part: string): number {
  let n = 0;
  for (let at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + 1)) n++;
  return n;
}
