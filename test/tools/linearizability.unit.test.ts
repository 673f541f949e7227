import { describe, expect, it } from "vitest";
import {
  checkLinearizable,
  lockModel,
  type LockInput,
  type LockLeaseView,
  type LockOutput,
  type Model,
  type Operation,
} from "../../src/tools/linearizability.ts";

type LockOp = Operation<LockInput, LockOutput>;

let nextId = 0;
function op(input: LockInput, output: LockOutput | undefined, invokeAt: number, returnAt: number | null, key = "db"): LockOp {
  return { id: ++nextId, key, input, output, invokeAt, returnAt };
}
function lease(owner: string, generation: number, etag: string, expiresAtMs: number, ttlMs = 1000): LockLeaseView {
  return { owner, generation, etag, expiresAtMs, ttlMs };
}
const acquire = (owner: string, ttlMs = 1000): LockInput => ({ op: "acquire", owner, ttlMs });
const granted = (l: LockLeaseView): LockOutput => ({ ok: true, lease: l });
const exists = (owner: string, expiresAtMs: number): LockOutput => ({ ok: false, code: "LEASE_EXISTS", holder: { owner, expiresAtMs } });
const check = (history: LockOp[]) => checkLinearizable(lockModel, history).ok;

describe("the lock model: known-good histories", () => {
  it("accepts acquire, release, acquire in sequence with rising generations", () => {
    expect(
      check([
        op(acquire("a"), granted(lease("a", 1, "e1", 1005)), 0, 10),
        op({ op: "release", etag: "e1" }, { ok: true }, 20, 30),
        op(acquire("b"), granted(lease("b", 2, "e2", 1045)), 40, 50),
      ]),
    ).toBe(true);
  });

  it("accepts a second acquire once the first lease has expired", () => {
    expect(
      check([
        op(acquire("a"), granted(lease("a", 1, "e1", 1000)), 0, 10),
        op(acquire("b"), granted(lease("b", 2, "e2", 2500)), 1500, 1510),
      ]),
    ).toBe(true);
  });

  it("orders concurrent operations as their answers require", () => {
    // b's refusal overlaps a's acquire: it must come after it.
    expect(check([op(acquire("a"), granted(lease("a", 1, "e1", 1050)), 0, 100), op(acquire("b"), exists("a", 1050), 50, 150)])).toBe(true);
  });

  it("accepts a get of null right at the expiry instant, and a renew after expiry when nobody acquired in between", () => {
    expect(
      check([
        op(acquire("a"), granted(lease("a", 1, "e1", 1000)), 0, 10),
        op({ op: "get" }, { ok: true, lease: null }, 990, 1010),
        op({ op: "renew", owner: "a", etag: "e1" }, granted(lease("a", 1, "e2", 3000)), 2000, 2010),
        op({ op: "release", etag: "e1" }, { ok: false, code: "NOT_HELD" }, 2100, 2110),
      ]),
    ).toBe(true);
  });

  it("lets an unanswered acquire have taken effect (a later get shows its lease) or not (a later acquire gets generation 1)", () => {
    expect(check([op(acquire("a"), undefined, 0, null), op({ op: "get" }, { ok: true, lease: lease("a", 1, "ex", 1100) }, 200, 210)])).toBe(
      true,
    );
    expect(check([op(acquire("a"), undefined, 0, null), op(acquire("b"), granted(lease("b", 1, "e1", 1300)), 300, 310)])).toBe(true);
    expect(check([op(acquire("a"), undefined, 0, null), op(acquire("b"), exists("a", 1200), 300, 310)])).toBe(true);
  });

  it("checks each lock name on its own", () => {
    const result = checkLinearizable(lockModel, [
      op(acquire("a"), granted(lease("a", 1, "e1", 5000)), 0, 10, "x"),
      op(acquire("b"), granted(lease("b", 1, "e2", 5000)), 0, 10, "y"),
    ]);
    expect(result.ok).toBe(true);
    expect(result.keys.map((k) => k.key).sort()).toEqual(["x", "y"]);
  });

  it("lets state-independent refusals pass anywhere", () => {
    expect(check([op(acquire("a", 99_999), { ok: false, code: "TTL_EXCEEDS_MAX" }, 0, 10)])).toBe(true);
  });
});

describe("the lock model: known-bad histories", () => {
  it("rejects two live holders", () => {
    expect(
      check([
        op(acquire("a"), granted(lease("a", 1, "e1", 10_000)), 0, 10),
        op(acquire("b"), granted(lease("b", 2, "e2", 10_100)), 100, 110),
      ]),
    ).toBe(false);
  });

  it("rejects a refusal naming a holder before anyone acquired", () => {
    expect(check([op(acquire("b"), exists("a", 1200), 0, 10), op(acquire("a"), granted(lease("a", 1, "e1", 1200)), 100, 200)])).toBe(false);
  });

  it("rejects a stale read after a release", () => {
    expect(
      check([
        op(acquire("a"), granted(lease("a", 1, "e1", 5000)), 0, 10),
        op({ op: "release", etag: "e1" }, { ok: true }, 20, 30),
        op({ op: "get" }, { ok: true, lease: lease("a", 1, "e1", 5000) }, 40, 50),
      ]),
    ).toBe(false);
  });

  it("rejects a free lock reported while a lease is surely live", () => {
    expect(
      check([op(acquire("a"), granted(lease("a", 1, "e1", 5000)), 0, 10), op({ op: "get" }, { ok: true, lease: null }, 100, 200)]),
    ).toBe(false);
  });

  it("rejects a skipped generation, and a generation explained by no unanswered acquire", () => {
    expect(
      check([
        op(acquire("a"), granted(lease("a", 1, "e1", 1005)), 0, 10),
        op({ op: "release", etag: "e1" }, { ok: true }, 20, 30),
        op(acquire("b"), granted(lease("b", 3, "e3", 1045)), 40, 50),
      ]),
    ).toBe(false);
    expect(check([op(acquire("a"), undefined, 0, null), op(acquire("b"), granted(lease("b", 3, "e3", 1300)), 300, 310)])).toBe(false);
  });

  it("rejects a renew that succeeds after another owner acquired", () => {
    expect(
      check([
        op(acquire("a"), granted(lease("a", 1, "e1", 1000)), 0, 10),
        op(acquire("b"), granted(lease("b", 2, "e2", 3000)), 2000, 2010),
        op({ op: "renew", owner: "a", etag: "e1" }, granted(lease("a", 1, "e4", 5000)), 4000, 4010),
      ]),
    ).toBe(false);
  });

  it("names the failing key and the longest order it could build", () => {
    const result = checkLinearizable(lockModel, [
      op(acquire("a"), granted(lease("a", 1, "e1", 9000)), 0, 10, "ok-key"),
      op(acquire("a"), granted(lease("a", 1, "e1", 9000)), 0, 10, "bad-key"),
      op(acquire("b"), granted(lease("b", 1, "e2", 9000)), 20, 30, "bad-key"),
    ]);
    expect(result.ok).toBe(false);
    const bad = result.keys.find((k) => k.key === "bad-key")!;
    expect(bad.ok).toBe(false);
    expect(bad.longestPrefix).toHaveLength(1);
    expect(result.keys.find((k) => k.key === "ok-key")!.ok).toBe(true);
  });

  it("gives up with unknown when the step budget runs out", () => {
    const ops = Array.from({ length: 8 }, (_, i) => op(acquire(`o${i}`), undefined, i, null));
    expect(checkLinearizable(lockModel, ops, { maxStepsPerKey: 3 }).ok).toBe("unknown");
  });
});

describe("the checker with another model (a register)", () => {
  type RegIn = { op: "write"; value: number } | { op: "read" };
  const register: Model<number, RegIn, number | null> = {
    init: () => 0,
    hash: (s) => String(s),
    step: (s, input, output, from) =>
      input.op === "write" ? [{ state: input.value, at: from }] : output === undefined || output === s ? [{ state: s, at: from }] : [],
  };
  const w = (value: number, a: number, b: number | null, out: number | null | undefined = null): Operation<RegIn, number | null> => ({
    id: ++nextId,
    key: "r",
    input: { op: "write", value },
    output: out,
    invokeAt: a,
    returnAt: b,
  });
  const r = (value: number, a: number, b: number): Operation<RegIn, number | null> => ({
    id: ++nextId,
    key: "r",
    input: { op: "read" },
    output: value,
    invokeAt: a,
    returnAt: b,
  });

  it("accepts reads that overlap a write seeing either value", () => {
    expect(checkLinearizable(register, [w(1, 0, 100), r(0, 10, 20), r(1, 30, 40), r(1, 110, 120)]).ok).toBe(true);
  });

  it("rejects a read that goes back to the old value after a newer one was seen", () => {
    expect(checkLinearizable(register, [w(1, 0, 100), r(1, 10, 20), r(0, 30, 40)]).ok).toBe(false);
  });

  it("lets a write that never answered explain a later read", () => {
    expect(checkLinearizable(register, [w(7, 0, null, undefined), r(7, 500, 510)]).ok).toBe(true);
  });
});
