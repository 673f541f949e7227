/**
 * Input rules of docs/protocol.md ("Limits", `BAD_REQUEST`) on the lock
 * endpoints, and lock names that pass them, however unusual, working as
 * separate locks.
 */
import { describe, expect, it } from "vitest";
import { uniquePrefix } from "../support/nats.ts";
import { expectFailure, expectLease, expectOk, lockClient, lockEvents, useLockHarness } from "../support/lock-fixtures.ts";

const h = useLockHarness();
const utf8 = new TextEncoder();

type Op = "acquire" | "renew" | "release" | "get" | "reset";

/** Requests every one of which must be refused with BAD_REQUEST (raw strings and bytes are sent as they are). */
const badRequests: [label: string, op: Op, body: unknown][] = [
  ["malformed JSON", "acquire", '{"name": "n", "owner": '],
  ["a JSON array", "acquire", '[{"name": "n", "owner": "o"}]'],
  ["a JSON string", "acquire", '"n"'],
  ["JSON null", "get", "null"],
  ["owner: 5", "acquire", { name: "n", owner: 5 }],
  ['ttlMs: "10"', "acquire", { name: "n", owner: "o", ttlMs: "10" }],
  ["ttlMs: 0", "acquire", { name: "n", owner: "o", ttlMs: 0 }],
  ["ttlMs: -1", "acquire", { name: "n", owner: "o", ttlMs: -1 }],
  ["ttlMs: 1.5", "acquire", { name: "n", owner: "o", ttlMs: 1.5 }],
  ["renew ttlMs: 0", "renew", { name: "n", owner: "o", etag: "e", ttlMs: 0 }],
  ["missing name", "acquire", { owner: "o" }],
  ["missing owner", "acquire", { name: "n" }],
  ["empty name", "acquire", { name: "", owner: "o" }],
  ["empty owner", "acquire", { name: "n", owner: "" }],
  ["name: null", "get", { name: null }],
  ["renew without etag", "renew", { name: "n", owner: "o" }],
  ["release with a numeric etag", "release", { name: "n", etag: 5 }],
  ["release with an empty etag", "release", { name: "n", etag: "" }],
  ["get without name", "get", {}],
  ["reset without name", "reset", {}],
  ["an empty requestId", "acquire", { name: "n", owner: "o", requestId: "" }],
  ["a 129-char requestId", "acquire", { name: "n", owner: "o", requestId: "r".repeat(129) }],
  ["a body over 64 KiB", "acquire", { name: "n", owner: "o".repeat(70 * 1024) }],
  ["a 257-byte name", "acquire", { name: "n".repeat(257), owner: "o" }],
  ["a name of 129 two-byte chars (258 bytes)", "acquire", { name: "é".repeat(129), owner: "o" }],
  ["a 257-byte owner", "acquire", { name: "n", owner: "ø".repeat(128) + "o" }],
  ["a lone surrogate in a name", "acquire", '{"name": "lock\\ud800", "owner": "o"}'],
  ["a lone low surrogate in a name", "get", '{"name": "\\udc00x"}'],
  ["a lone surrogate in an owner", "acquire", '{"name": "n", "owner": "\\ud83d"}'],
  ["invalid UTF-8 bytes", "acquire", Uint8Array.from([...utf8.encode('{"name": "n'), 0xff, 0xfe, ...utf8.encode('", "owner": "o"}')])],
  ["a truncated UTF-8 sequence", "get", Uint8Array.from([...utf8.encode('{"name": "'), 0xe2, 0x82, ...utf8.encode('"}')])],
];

describe("BAD_REQUEST", () => {
  it("sanity: the bodies below are what they claim", () => {
    expect(utf8.encode("é".repeat(129)).length).toBe(258);
    expect(utf8.encode("ø".repeat(128) + "o").length).toBe(257);
    expect(utf8.encode(JSON.stringify({ name: "n", owner: "o".repeat(70 * 1024) })).length).toBeGreaterThan(64 * 1024);
    expect(() =>
      new TextDecoder("utf-8", { fatal: true }).decode(badRequests.find((b) => b[0] === "invalid UTF-8 bytes")![2] as Uint8Array),
    ).toThrow();
  });

  it.each(badRequests)("refuses %s with both error headers and appends nothing", async (_label, op, body) => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const locks = lockClient(svc.nc, prefix);
    expectFailure(await locks[op](body), 400, "BAD_REQUEST");
    expect(await svc.service.log.lastSeq()).toBe(0);
    // The service is still answering well-formed requests.
    expectLease(await locks.acquire({ name: "n", owner: "o" }));
  });

  it("accepts the limits themselves: 256-byte names and owners, a 128-char requestId", async () => {
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const locks = lockClient(svc.nc, prefix);
    const owner = "ø".repeat(128);
    const lease = expectLease(await locks.acquire({ name: "é".repeat(128), owner, requestId: "r".repeat(128) }));
    expect(lease).toMatchObject({ name: "é".repeat(128), owner, generation: 1 });
  });
});

describe("lock names", () => {
  const names = [
    "orders.eu",
    "a.*",
    "a.>",
    "*",
    ">",
    ".",
    "..",
    "with space",
    " ",
    "a/b",
    "🔒 lock",
    "a~2Eb",
    "a_2Eb",
    "~",
    "~7E",
    "Ünïcödé",
    "n".repeat(256),
    "é".repeat(128),
    "🔒".repeat(64),
  ];

  it("every name within the limits works as its own lock (acquire, get, release)", async () => {
    expect(new Set(names).size).toBe(names.length);
    for (const name of names.slice(-3)) expect(utf8.encode(name).length).toBe(256);
    const prefix = uniquePrefix();
    const svc = await h.service(prefix);
    const locks = lockClient(svc.nc, prefix);

    // Concurrent acquires under distinct names: any two sharing a lock would collide (LEASE_EXISTS).
    const leases = await Promise.all(names.map(async (name, i) => expectLease(await locks.acquire({ name, owner: `owner-${i}` }))));
    leases.forEach((lease, i) => expect(lease).toMatchObject({ name: names[i], owner: `owner-${i}`, generation: 1 }));

    for (const [i, name] of names.entries()) {
      expect(expectOk(await locks.get({ name })).lease).toEqual(leases[i]);
      const events = await lockEvents(svc.service, name);
      expect(events).toHaveLength(1);
      expect(events[0]!.event).toMatchObject({ type: "LockAcquired", kind: "lock", id: name });
    }
    // Each name has its own subject.
    expect(new Set(names.map((n) => svc.service.subjects.event("lock", n))).size).toBe(names.length);

    for (const [i, name] of names.entries()) {
      expect(expectOk(await locks.release({ name, etag: leases[i]!.etag }))).toEqual({});
      expect(expectOk(await locks.get({ name }))).toEqual({ lease: null, waiters: 0 });
    }
    // Releasing one name left no other name released twice or held.
    const again = await Promise.all(names.map((name) => locks.acquire({ name, owner: "second" })));
    for (const r of again) expect(expectLease(r).generation).toBe(2);
  });
});
