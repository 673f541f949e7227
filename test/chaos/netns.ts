/**
 * A network namespace for one node of a local nats-server cluster, so that a
 * partition can cut that node's routes and nothing else. The node is reached
 * over two veth links: clients and service instances use one, the other
 * nodes' routes the other. Cutting adds blackhole routes for the route link's
 * two addresses on both sides: the route connections stall, as on a real
 * network split, while clients stay connected to the isolated node. Needs
 * root and iproute2's `ip`.
 */
import { execFileSync } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";
import type { NodeNetwork } from "../../src/cluster/local-cluster.ts";

/** A namespace holding one node, and the switch of its routes. */
export interface IsolatedNodeNetwork {
  /** Where each node of the cluster listens (pass to startLocalCluster). */
  readonly network: (node: number) => NodeNetwork;
  /** Cuts the isolated node's routes (both directions). */
  cut(): void;
  /** Restores them. */
  heal(): void;
  /** Deletes the namespace and its links (idempotent). */
  remove(): void;
}

const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"], timeout: 10_000 });

/** Creates the namespace and its two links; node `isolated` will run inside it. */
export function isolateNode(isolated: number): IsolatedNodeNetwork {
  if (process.getuid?.() !== 0) throw new Error("a partition run needs root (it creates a network namespace with `ip netns`)");
  const id = randomBytes(3).toString("hex");
  const ns = `leasehold-${id}`;
  // 10.x.y.0/30 carries clients, 10.x.y.4/30 the routes: .1 and .5 on this side, .2 and .6 in the namespace.
  const net = `10.${randomInt(100, 200)}.${randomInt(0, 256)}`;
  const [clientHere, clientThere, routeHere, routeThere] = [`${net}.1`, `${net}.2`, `${net}.5`, `${net}.6`];
  const links = { client: [`lh${id}c0`, `lh${id}c1`], route: [`lh${id}r0`, `lh${id}r1`] };
  let removed = false;
  let cut = false;
  const inNs = (...args: string[]) => ip("netns", "exec", ns, "ip", ...args);
  const remove = () => {
    if (removed) return;
    removed = true;
    if (cut) ip("route", "del", "blackhole", `${routeThere}/32`);
    ip("netns", "del", ns);
  };
  try {
    ip("netns", "add", ns);
    inNs("link", "set", "lo", "up");
    for (const [[here, there], addressHere, addressThere] of [
      [links.client, clientHere, clientThere],
      [links.route, routeHere, routeThere],
    ] as const) {
      ip("link", "add", here!, "type", "veth", "peer", "name", there!);
      ip("link", "set", there!, "netns", ns);
      ip("addr", "add", `${addressHere}/30`, "dev", here!);
      inNs("addr", "add", `${addressThere}/30`, "dev", there!);
      ip("link", "set", here!, "up");
      inNs("link", "set", there!, "up");
    }
  } catch (e) {
    remove();
    throw e;
  }
  process.once("exit", () => {
    try {
      remove();
    } catch {
      // Best effort at exit: the namespace may be gone already.
    }
  });
  return {
    network: (node) =>
      node === isolated
        ? { host: clientThere, clusterHost: routeThere, launcher: ["ip", "netns", "exec", ns] }
        : { host: "127.0.0.1", clusterHost: routeHere },
    cut() {
      if (cut) return;
      inNs("route", "add", "blackhole", `${routeHere}/32`);
      ip("route", "add", "blackhole", `${routeThere}/32`);
      cut = true;
    },
    heal() {
      if (!cut) return;
      inNs("route", "del", "blackhole", `${routeHere}/32`);
      ip("route", "del", "blackhole", `${routeThere}/32`);
      cut = false;
    },
    remove,
  };
}
