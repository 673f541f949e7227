/**
 * The session keeper's timing on fake timers, against a scripted session API:
 * one keepalive every ttl / 3 whatever the number of locks in the session,
 * retries of a transient failure (same requestId, until the local deadline),
 * a resend at once after a reconnect, the lost signal on NO_SESSION and on the
 * deadline, locks taken in the session, withLock, and close.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  LeaseholdTimeoutError,
  NoSessionError,
  NotHeldError,
  SessionClosedError,
  SessionLostError,
  keepSession,
  type CallOptions,
  type LockAcquireRequest,
  type LockLease,
  type Session,
  type SessionIdRequest,
  type SessionKeeperApi,
} from "../../src/client/index.ts";
import { fakeableTimers } from "../support/keeper-timers.ts";

const TTL = 3000;

const timers = fakeableTimers;

type Step = { ok: true } | { error: Error } | { hang: true };

/** A session API whose keepalives answer from a script (one step per call), recording what was sent and when. */
class ScriptedSessions implements SessionKeeperApi {
  readonly keepalives: { at: number; request: SessionIdRequest; options: CallOptions | undefined }[] = [];
  readonly acquires: LockAcquireRequest[] = [];
  readonly releases: string[] = [];
  readonly closes: string[] = [];
  script: Step[] = [];
  releaseError: Error | undefined;
  private readonly reconnectListeners = new Set<() => void>();
  private generation = 0;

  open() {
    return Promise.resolve({ session: this.session() });
  }

  keepalive(request: SessionIdRequest, options?: CallOptions) {
    this.keepalives.push({ at: Date.now(), request, options });
    const step = this.script.shift() ?? { ok: true };
    if ("ok" in step) return Promise.resolve({ session: this.session() });
    if ("error" in step) return Promise.reject(step.error);
    return new Promise<{ session: Session }>((_resolve, reject) => {
      options?.signal?.addEventListener("abort", () => reject(options.signal!.reason as Error), { once: true });
    });
  }

  close(request: SessionIdRequest) {
    this.closes.push(request.id);
    return Promise.resolve({});
  }

  acquireLock(request: LockAcquireRequest) {
    this.acquires.push(request);
    this.generation++;
    const lease: LockLease = {
      name: request.name,
      owner: request.owner,
      generation: this.generation,
      etag: `e-${request.name}`,
      expiresAt: new Date(Date.now() + TTL).toISOString(),
      ttlMs: TTL,
      session: "s1",
    };
    return Promise.resolve({ lease });
  }

  releaseLock(request: { name: string }) {
    this.releases.push(request.name);
    return this.releaseError === undefined ? Promise.resolve({}) : Promise.reject(this.releaseError);
  }

  onReconnect(listener: () => void) {
    this.reconnectListeners.add(listener);
    return () => this.reconnectListeners.delete(listener);
  }

  /** NATS reconnected: tells every listener. */
  reconnect(): void {
    for (const listener of this.reconnectListeners) listener();
  }

  private session(): Session {
    return { id: "s1", owner: "me", ttlMs: TTL, expiresAt: new Date(Date.now() + TTL).toISOString() };
  }
}

const noSession = () => new NoSessionError("NO_SESSION", "no session s1", { status: 404 });
const timeout = () => new LeaseholdTimeoutError("leasehold.v1.session.keepalive", 100, 1, "r");

beforeEach(() => {
  vi.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe("SessionKeeper timing", () => {
  it("sends one keepalive every ttl / 3 for the session, however many locks it holds", async () => {
    const api = new ScriptedSessions();
    const t0 = Date.now();
    const session = await keepSession(api, { owner: "me", ttlMs: TTL, timers }, 5000);
    for (let i = 0; i < 100; i++) await session.acquire(`job-${i}`);
    expect(api.acquires.every((a) => a.session === "s1" && a.owner === "me" && !("ttlMs" in a))).toBe(true);
    expect(session.keepaliveEveryMs).toBe(1000);
    await vi.advanceTimersByTimeAsync(4000);
    expect(api.keepalives.map((k) => k.at - t0)).toEqual([1000, 2000, 3000, 4000]);
    expect(api.keepalives.every((k) => k.request.id === "s1")).toBe(true);
    // Each attempt is bounded by the time left (the TTL less a quarter of it, the skew margin of a session under 8 s).
    expect(api.keepalives[0]!.options).toMatchObject({ timeoutMs: 1250, retry: false });
    expect(session.held).toBe(true);
    await session.close();
  });

  it("retries a transient failure with the same requestId, and counts the TTL from the successful keepalive", async () => {
    const api = new ScriptedSessions();
    const session = await keepSession(api, { owner: "me", ttlMs: TTL, timers }, 5000);
    api.script = [{ error: timeout() }, { error: timeout() }];
    await vi.advanceTimersByTimeAsync(1000);
    await vi.advanceTimersByTimeAsync(400);
    expect(api.keepalives).toHaveLength(3);
    const ids = api.keepalives.map((k) => k.request.requestId);
    expect(new Set(ids).size).toBe(1);
    expect(session.held).toBe(true);
    // The third try succeeded at +1333 ms: the next keepalive is a period after it.
    const third = api.keepalives[2]!.at;
    await vi.advanceTimersByTimeAsync(third + 1000 - Date.now());
    expect(api.keepalives).toHaveLength(4);
    expect(api.keepalives[3]!.at).toBe(third + 1000);
    await session.close();
  });

  it("is lost with reason expired at its local deadline when no keepalive succeeds, aborting the signal first", async () => {
    const api = new ScriptedSessions();
    const t0 = Date.now();
    const lost: SessionLostError[] = [];
    const session = await keepSession(api, { owner: "me", ttlMs: TTL, timers, onLost: (e) => lost.push(e) }, 5000);
    const lock = await session.acquire("job");
    api.script = Array.from({ length: 100 }, () => ({ error: timeout() }));
    await vi.advanceTimersByTimeAsync(2249);
    expect(session.held).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(Date.now() - t0).toBe(2250);
    expect(session.held).toBe(false);
    expect(lock.signal.aborted).toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(SessionLostError);
    expect(lost.map((e) => e.reason)).toEqual(["expired"]);
    expect(() => session.throwIfLost()).toThrow(SessionLostError);
    const sent = api.keepalives.length;
    await vi.advanceTimersByTimeAsync(5000);
    expect(api.keepalives).toHaveLength(sent);
  });

  it("is lost at once with reason ended when a keepalive answers NO_SESSION", async () => {
    const api = new ScriptedSessions();
    const lost: SessionLostError[] = [];
    const session = await keepSession(api, { owner: "me", ttlMs: TTL, timers, onLost: (e) => lost.push(e) }, 5000);
    api.script = [{ error: noSession() }];
    await vi.advanceTimersByTimeAsync(1000);
    expect(lost.map((e) => [e.reason, e.session])).toEqual([["ended", "s1"]]);
    expect(session.lost?.cause).toBeInstanceOf(NoSessionError);
    expect(session.signal.aborted).toBe(true);
    await expect(session.acquire("later")).rejects.toBeInstanceOf(SessionLostError);
    await session.close();
    expect(api.closes).toEqual([]);
  });

  it("sends a keepalive again at once after a reconnect instead of waiting out the one in flight", async () => {
    const api = new ScriptedSessions();
    const session = await keepSession(api, { owner: "me", ttlMs: TTL, timers }, 5000);
    api.script = [{ hang: true }];
    await vi.advanceTimersByTimeAsync(1000);
    expect(api.keepalives).toHaveLength(1);
    api.reconnect();
    await vi.advanceTimersByTimeAsync(0);
    expect(api.keepalives).toHaveLength(2);
    expect(api.keepalives[1]!.request.requestId).toBe(api.keepalives[0]!.request.requestId);
    expect(session.held).toBe(true);
    await session.close();
  });

  it("withLock releases the lock on the way out, also when fn throws, and the session stays open", async () => {
    const api = new ScriptedSessions();
    const session = await keepSession(api, { owner: "me", ttlMs: TTL, timers }, 5000);
    const value = await session.withLock("a", (lock) => Promise.resolve(lock.generation));
    expect(value).toBe(1);
    await expect(session.withLock("b", () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    api.releaseError = new NotHeldError("NOT_HELD", "freed already", { status: 409 });
    await expect(session.withLock("c", () => Promise.resolve("done"))).resolves.toBe("done");
    expect(api.releases).toEqual(["a", "b", "c"]);
    expect(session.held).toBe(true);
    await session.close();
  });

  it("withLock's signal aborts when the session is lost during fn", async () => {
    const api = new ScriptedSessions();
    const session = await keepSession(api, { owner: "me", ttlMs: TTL, timers }, 5000);
    api.script = [{ error: noSession() }];
    const running = session.withLock(
      "a",
      (lock) => new Promise<unknown>((resolve) => lock.signal.addEventListener("abort", () => resolve(lock.signal.reason), { once: true })),
    );
    await vi.advanceTimersByTimeAsync(1000);
    expect(await running).toBeInstanceOf(SessionLostError);
    expect(api.releases).toEqual(["a"]);
  });

  it("close stops the keepalives, aborts with SessionClosedError and closes the session once", async () => {
    const api = new ScriptedSessions();
    const lost: SessionLostError[] = [];
    const session = await keepSession(api, { owner: "me", ttlMs: TTL, timers, onLost: (e) => lost.push(e) }, 5000);
    await Promise.all([session.close(), session.close()]);
    expect(api.closes).toEqual(["s1"]);
    expect(session.signal.reason).toBeInstanceOf(SessionClosedError);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(api.keepalives).toHaveLength(0);
    expect(lost).toEqual([]);
  });
});
