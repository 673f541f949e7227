/**
 * One valid request body for every op of the contract, each from its own
 * fixtures (the lock and route names are unique per call, so a test can
 * send them to a live service in any order without them refusing each other).
 */
import { hostRequests } from "../../src/host/requests.ts";
import { lockRequests } from "../../src/lock/endpoints.ts";
import { proxyRequests } from "../../src/proxy/requests.ts";
import { routeRequests } from "../../src/route/requests.ts";
import { sessionRequests } from "../../src/session/requests.ts";

/** `<kind>.<op>` → its request schema. */
export const REQUEST_SCHEMAS = {
  ...prefixed("lock", lockRequests),
  ...prefixed("proxy", proxyRequests),
  ...prefixed("host", hostRequests),
  ...prefixed("route", routeRequests),
  ...prefixed("session", sessionRequests),
};

/** Every `<kind>.<op>` of the contract. */
export type KindOp = keyof typeof REQUEST_SCHEMAS;

/** A valid body of each op, with every optional field the op defines that a well-formed call may carry. */
export function validBodies(tag: string): Record<KindOp, Record<string, unknown>> {
  const lock = `lock-${tag}`;
  const route = `route-${tag}`;
  return {
    "lock.acquire": { name: lock, owner: "o", ttlMs: 1000, waitMs: 0 },
    "lock.renew": { name: lock, owner: "o", etag: "e", ttlMs: 1000 },
    "lock.release": { name: lock, etag: "e" },
    "lock.get": { name: lock },
    "lock.reset": { name: lock },
    "proxy.register": { proxy: `p-${tag}`, maxLeases: 1, latencyMs: 0, labels: {}, healthy: true },
    "proxy.remove": { proxy: `p-${tag}` },
    "proxy.acquire": { ttlMs: 1000, target: "", candidates: [`p-${tag}`], labels: {} },
    "proxy.release": { leaseId: "l" },
    "proxy.report": { leaseId: "l", result: "ok", target: "" },
    "proxy.list": {},
    "proxy.counts": {},
    "host.set": { host: `h-${tag}`, healthy: true, draining: false, maxLeases: null },
    "host.list": {},
    "route.acquire": { route, fp: "", model: "m", candidates: [`h-${tag}`] },
    "route.move": { route, fp: "", model: "m", host: `h-${tag}` },
    "route.candidates": { route, hosts: [`h-${tag}`] },
    "route.pin": { route, host: `h-${tag}` },
    "route.unpin": { route },
    "route.release": { route },
    "route.get": { route },
    "route.snapshot": {},
    "session.open": { owner: "o", ttlMs: 1000 },
    "session.keepalive": { id: `s-${tag}` },
    "session.close": { id: `s-${tag}` },
    "session.get": { id: `s-${tag}` },
  };
}

function prefixed<K extends string, T extends Record<string, unknown>>(
  kind: K,
  schemas: T,
): { [O in keyof T & string as `${K}.${O}`]: T[O] } {
  return Object.fromEntries(Object.entries(schemas).map(([op, schema]) => [`${kind}.${op}`, schema])) as never;
}
