/**
 * leasehold's package entry point: the typed client and its public types.
 * The service itself runs from the `leasehold` binary (`leasehold serve`).
 */
export { LeaseholdClient, LockApi, SessionApi, ProxyApi, HostApi, RouteApi } from "./client/client.ts";
export type { CallOptions, LeaseholdClientOptions } from "./client/transport.ts";
export {
  LeaseholdError,
  LeaseholdTransportError,
  LeaseholdTimeoutError,
  BadRequestError,
  TtlExceedsMaxError,
  UnknownLeaseError,
  UnknownProxyError,
  UnknownHostError,
  NoSessionError,
  NoMatchError,
  LeaseExistsError,
  TooManyWaitersError,
  NotHeldError,
  AlreadyReleasedError,
  CorruptError,
  NoHostError,
  PinnedDownError,
  UnavailableError,
} from "./client/errors.ts";
export type { ErrorCode, LeaseholdErrorInit } from "./client/errors.ts";
export { LockKeeper, LockLostError, LockClosedError, DEFAULT_CLOCK_SKEW_MARGIN_MS, localDeadline } from "./client/lock-keeper.ts";
export type { KeepOptions, KeeperTimers, LockLossReason } from "./client/lock-keeper.ts";
export { SessionKeeper, SessionLostError, SessionClosedError } from "./client/session-keeper.ts";
export type {
  KeepSessionOptions,
  SessionAcquireOptions,
  SessionLock,
  SessionLossReason,
  SessionKeeperApi,
} from "./client/session-keeper.ts";
export { LockWatch } from "./client/lock-watch.ts";
export { Election, ELECTION_WAIT_MS } from "./client/election.ts";
export type { ElectOptions, ElectionLockApi, LeaderTerm, DeposedTerm } from "./client/election.ts";
export type { LockWatchOptions, LockWatchState, WatchedLease } from "./client/lock-watch.ts";
export { HeldProxyLease } from "./client/proxy-lease.ts";
export type { ProxyLeaseHandle, ProxyOutcome } from "./client/proxy-lease.ts";
export { DurableApi } from "./client/durable.ts";
export { publishHostLoad } from "./client/host-load.ts";
export type { DurableAck, DurableSessionApi, DurableMethod, DurableOptions, DurableReplyOptions } from "./client/durable.ts";
export type * from "./contract/messages.ts";
export { VERSION } from "./version.ts";
