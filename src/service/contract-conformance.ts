/**
 * Compile-time proof that the request schemas take what the contract's
 * request types (src/contract/messages.ts, which the client sends) allow:
 * a field the contract types one way and a schema another fails the type
 * check here, so the client and the server cannot drift apart unnoticed. The
 * other way round too: a request type with a field its schema does not
 * define (which the server refuses, 1.2 strict bodies) fails it as well.
 */
import type { z } from "zod";
import type * as C from "../contract/messages.ts";
import type { hostRequests } from "../host/requests.ts";
import type { lockRequests } from "../lock/endpoints.ts";
import type { proxyRequests } from "../proxy/requests.ts";
import type { routeRequests } from "../route/requests.ts";
import type { sessionRequests } from "../session/requests.ts";

/** Each field of `Req` that `Input` does not define, typed `never` (so only a `Req` without such fields satisfies it). */
type NoFieldsBeyond<Input, Req> = { readonly [K in Exclude<keyof Req, keyof Input>]: never };

/** Compiles only when every request of type `_Req` is a valid input of `Schema`'s type, with no field it does not define. */
function accepts<Schema extends z.ZodType, _Req extends z.input<Schema> & NoFieldsBeyond<z.input<Schema>, _Req>>(): true {
  return true;
}

/** Every endpoint's schema against the contract's request type. */
export const CONTRACT_CONFORMANCE: {
  [
    K in
      | "lock.acquire"
      | "lock.renew"
      | "lock.release"
      | "lock.get"
      | "lock.reset"
      | "proxy.register"
      | "proxy.remove"
      | "proxy.acquire"
      | "proxy.release"
      | "proxy.report"
      | "host.set"
      | "route.acquire"
      | "route.move"
      | "route.candidates"
      | "route.pin"
      | "route.unpin"
      | "route.release"
      | "route.get"
      | "session.open"
      | "session.keepalive"
      | "session.close"
      | "session.get"
  ]: true;
} = {
  "lock.acquire": accepts<typeof lockRequests.acquire, C.LockAcquireRequest>(),
  "lock.renew": accepts<typeof lockRequests.renew, C.LockRenewRequest>(),
  "lock.release": accepts<typeof lockRequests.release, C.LockReleaseRequest>(),
  "lock.get": accepts<typeof lockRequests.get, C.LockNameRequest>(),
  "lock.reset": accepts<typeof lockRequests.reset, C.LockNameRequest>(),
  "proxy.register": accepts<typeof proxyRequests.register, C.ProxyRegisterRequest>(),
  "proxy.remove": accepts<typeof proxyRequests.remove, C.ProxyRemoveRequest>(),
  "proxy.acquire": accepts<typeof proxyRequests.acquire, C.ProxyAcquireRequest>(),
  "proxy.release": accepts<typeof proxyRequests.release, C.ProxyReleaseRequest>(),
  "proxy.report": accepts<typeof proxyRequests.report, C.ProxyReportRequest>(),
  "host.set": accepts<typeof hostRequests.set, C.HostSetRequest>(),
  "route.acquire": accepts<typeof routeRequests.acquire, C.RouteAcquireRequest>(),
  "route.move": accepts<typeof routeRequests.move, C.RouteMoveRequest>(),
  "route.candidates": accepts<typeof routeRequests.candidates, C.RouteCandidatesRequest>(),
  "route.pin": accepts<typeof routeRequests.pin, C.RoutePinRequest>(),
  "route.unpin": accepts<typeof routeRequests.unpin, C.RouteNameRequest>(),
  "route.release": accepts<typeof routeRequests.release, C.RouteNameRequest>(),
  "route.get": accepts<typeof routeRequests.get, C.RouteNameRequest>(),
  "session.open": accepts<typeof sessionRequests.open, C.SessionOpenRequest>(),
  "session.keepalive": accepts<typeof sessionRequests.keepalive, C.SessionIdRequest>(),
  "session.close": accepts<typeof sessionRequests.close, C.SessionIdRequest>(),
  "session.get": accepts<typeof sessionRequests.get, C.SessionIdRequest>(),
};
