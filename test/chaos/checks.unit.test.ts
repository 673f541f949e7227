import { describe, expect, it } from "vitest";
import { type StoredMessage } from "../../src/events/event-log.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { checkRun, checkTimeouts, lockHistory, VerdictBuilder } from "./checks.ts";
import type { OpRecord, OpResult } from "./history.ts";

const subjects = new Subjects("chk");
const settings = { prefix: "chk", cooldownMs: 3000, maxTtlMs: 30_000 };
const iso = (ms: number) => new Date(ms).toISOString();
let ids = 0;

function record(command: string, body: Record<string, unknown>, result: OpResult, invokeAt: number, returnAt: number | null): OpRecord {
  const requestId = `r${++ids}`;
  return {
    id: ids,
    client: "c",
    command,
    body: { ...body, requestId },
    requestId,
    invokeAt,
    returnAt,
    result,
    attempts: [
      {
        sentAt: invokeAt,
        endAt: returnAt ?? invokeAt + 2000,
        outcome: result.status === "ok" ? "ok" : result.status === "error" ? "error" : "timeout",
      },
    ],
  };
}
const lease = (owner: string, generation: number, etag: string, expiresAtMs: number) => ({
  name: "db",
  owner,
  generation,
  etag,
  expiresAt: iso(expiresAtMs),
  ttlMs: 1000,
});
const acquired = (r: OpRecord, seq: number, generation: number, atMs: number, previousOwner = ""): StoredMessage => ({
  seq,
  subject: subjects.event("lock", "db"),
  time: atMs,
  payload: new TextEncoder().encode(
    JSON.stringify({
      type: "LockAcquired",
      v: 1,
      at: iso(atMs),
      kind: "lock",
      id: "db",
      requestId: r.requestId,
      data: { owner: r.body.owner, generation, ttlMs: 1000, expiresAt: iso(atMs + 1000), previousOwner },
    }),
  ),
});
const T = Date.parse("2026-01-01T00:00:00.000Z");

/** Lock db's acquire by `owner`, granted with generation `generation` until `expiresAtMs`. */
const granted = (owner: string, generation: number, etag: string, expiresAtMs: number, invokeAt: number, returnAt: number) =>
  record(
    "lock.acquire",
    { name: "db", owner, ttlMs: 1000 },
    { status: "ok", body: { lease: lease(owner, generation, etag, expiresAtMs) } },
    invokeAt,
    returnAt,
  );
/** Lock db's acquire by `owner`, refused LEASE_EXISTS while `holder` holds it until `expiresAtMs`. */
const refused = (owner: string, holder: string, expiresAtMs: number, invokeAt: number, returnAt: number) =>
  record(
    "lock.acquire",
    { name: "db", owner, ttlMs: 1000 },
    { status: "error", code: "LEASE_EXISTS", details: { owner: holder, expiresAt: iso(expiresAtMs) } },
    invokeAt,
    returnAt,
  );

function verdictOf(records: OpRecord[], messages: StoredMessage[]) {
  const v = new VerdictBuilder();
  checkRun(records, messages, settings, v);
  return v.build().violations;
}

describe("chaos checks", () => {
  it("find nothing wrong in a sound run", () => {
    const a = granted("a", 1, "e1", T + 1005, T, T + 10);
    const b = refused("b", "a", T + 1005, T + 20, T + 30);
    const violations = verdictOf([a, b], [acquired(a, 1, 1, T + 5)]);
    expect(Object.values(violations).every((n) => n === 0)).toBe(true);
  });

  it("catch an acknowledged acquire missing from the stream, an event nobody caused, and one requestId recorded twice", () => {
    const a = granted("a", 1, "e1", T + 1005, T, T + 10);
    const stranger = { ...a, requestId: "nobody" } as OpRecord;
    const v1 = verdictOf([a], []);
    expect(v1["acknowledged-command-lost"]).toBe(1);
    const v2 = verdictOf([a], [acquired(a, 1, 1, T + 5), acquired(stranger, 2, 2, T + 2000, "a")]);
    expect(v2["event-without-cause"]).toBe(1);
    const v3 = verdictOf([a], [acquired(a, 1, 1, T + 5), acquired(a, 2, 2, T + 2000, "a")]);
    expect(v3["duplicate-event-for-requestId"]).toBe(1);
  });

  it("catch an operation answered only UNAVAILABLE whose event is in the stream, and not one whose event is absent", () => {
    const told = (r: OpRecord): OpRecord => ({
      ...r,
      attempts: [{ sentAt: T, endAt: T + 10, outcome: "unavailable", code: "UNAVAILABLE", message: "no answer in time" }],
    });
    const a = told(record("lock.acquire", { name: "db", owner: "a", ttlMs: 1000 }, { status: "unknown" }, T, null));
    expect(verdictOf([a], [acquired(a, 1, 1, T + 5)])["unavailable-yet-recorded"]).toBe(1);
    expect(verdictOf([a], [])["unavailable-yet-recorded"]).toBe(0);
  });

  it("take an attempt that timed out before a refusal as carried out later when the stream holds its event", () => {
    const b = granted("b", 1, "e1", T + 1005, T, T + 10);
    // a's first attempt is held up in the network; its retry is refused while b holds the lock...
    const a = refused("a", "b", T + 1005, T + 20, T + 2100);
    const late = { ...a, attempts: [{ sentAt: T + 20, endAt: T + 2020, outcome: "timeout" as const }, ...a.attempts] };
    // ...and the first attempt reaches a service after b's lease ran out, which grants it.
    const get = record("lock.get", { name: "db" }, { status: "ok", body: { lease: lease("a", 2, "e2", T + 3500) } }, T + 3000, T + 3010);
    const events = [acquired(b, 1, 1, T + 5), acquired(a, 2, 2, T + 2500, "b")];
    expect(verdictOf([b, late, get], events)["lock-history-not-linearizable"]).toBe(0);
    // Without an attempt left unanswered, the refusal is the whole operation: its event cannot be.
    expect(verdictOf([b, a, get], events)["lock-history-not-linearizable"]).toBe(1);
  });

  it("catch two live holders in the stream and a non-linearizable lock history from the clients", () => {
    const a = granted("a", 1, "e1", T + 1005, T, T + 10);
    const b = granted("b", 2, "e2", T + 1105, T + 100, T + 110);
    const violations = verdictOf([a, b], [acquired(a, 1, 1, T + 5), acquired(b, 2, 2, T + 105, "a")]);
    expect(violations["two-live-lock-holders"]).toBe(1);
    expect(violations["lock-history-not-linearizable"]).toBe(1);
  });

  it("catch a route key answered with two hosts, and an operation never answered", () => {
    const r1 = record("route.acquire", { route: "r", fp: "", model: "m" }, { status: "ok", body: { host: "h0", reused: true } }, T, T + 10);
    const r2 = record(
      "route.acquire",
      { route: "r", fp: "", model: "m" },
      { status: "ok", body: { host: "h1", reused: true } },
      T + 20,
      T + 30,
    );
    const lost = record("lock.get", { name: "x" }, { status: "unknown" }, T, null);
    const violations = verdictOf([r1, r2, lost], []);
    expect(violations["route-key-on-two-hosts"]).toBe(1);
    expect(violations["request-unanswered"]).toBe(1);
  });

  it("resolve an unanswered lock command with the stream: no event, no effect; an event bounds when it took effect", () => {
    const lost = record("lock.acquire", { name: "db", owner: "x", ttlMs: 1000 }, { status: "unknown" }, T, null);
    const landed = record("lock.acquire", { name: "db", owner: "y", ttlMs: 1000 }, { status: "unknown" }, T + 5000, null);
    const history = lockHistory([lost, landed], new Map([[landed.requestId, T + 5100]]));
    expect(history.map((op) => [op.input, op.returnAt])).toEqual([[{ op: "acquire", owner: "y", ttlMs: 1000 }, T + 5100]]);
    // Without the stream both stay open-ended.
    expect(lockHistory([lost, landed]).map((op) => op.returnAt)).toEqual([null, null]);
  });

  it("excuse a timed-out attempt inside a fault window only", () => {
    const during = record("lock.get", { name: "x" }, { status: "unknown" }, T + 1000, null);
    const after = record("lock.get", { name: "x" }, { status: "unknown" }, T + 9000, null);
    const v = new VerdictBuilder();
    checkTimeouts([during, after], [{ from: T, until: T + 5000 }], T, v);
    expect(v.build().violations["attempt-timed-out-outside-faults"]).toBe(1);
  });
});
