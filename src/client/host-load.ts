/**
 * Publishing a host's load from the host's side (docs/protocol.md, "Host
 * load"): `{load}` on `<prefix>.loads.<host>`, no reply. Every service
 * instance keeps the latest; a load not published again within the service's
 * `--load-stale-ms` counts as unknown, so publish it every few seconds.
 *
 * @example
 * ```ts
 * setInterval(() => publishHostLoad(nc, "gpu-7", queueDepth()), 1000);
 * ```
 */
import type { NatsConnection } from "@nats-io/nats-core";
import { hostLoadBody } from "../contract/host-load.ts";
import { isValidPrefix, Subjects } from "../contract/subjects.ts";

/** Publishes `load` (a finite number >= 0, lower is better) for `host`; a TypeError for a bad load or prefix. */
export function publishHostLoad(nc: NatsConnection, host: string, load: number, options: { readonly prefix?: string } = {}): void {
  const prefix = options.prefix ?? "leasehold";
  if (!isValidPrefix(prefix))
    throw new TypeError(`invalid prefix ${JSON.stringify(prefix)}: subject tokens of A-Z a-z 0-9 _ - separated by dots`);
  if (host.length === 0) throw new TypeError("host must not be empty");
  nc.publish(new Subjects(prefix).load(host), hostLoadBody(load));
}
