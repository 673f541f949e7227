import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { approximateSize, ReplyMemory, type ReplyMemoryLimits } from "../../src/projections/fold-store.ts";
import { encodeEvent, type RecordedEvent } from "../../src/events/envelope.ts";

/** The obvious reply memory: an array in the order replies were remembered, scanned whole. */
class ReferenceMemory {
  readonly entries: { msgId: string; reply: unknown; atMs: number; bytes: number }[] = [];
  constructor(private readonly limits: Required<ReplyMemoryLimits>) {}
  private get bytes(): number {
    return this.entries.reduce((n, e) => n + e.bytes, 0);
  }
  remember(msgId: string, reply: unknown, atMs: number): void {
    const at = this.entries.findIndex((e) => e.msgId === msgId);
    if (at >= 0) this.entries.splice(at, 1);
    this.entries.push({ msgId, reply, atMs, bytes: msgId.length + approximateSize(reply) + 16 });
    while (this.entries.length > 0 && (this.entries.length > this.limits.maxEntries || this.bytes > this.limits.maxBytes))
      this.entries.shift();
  }
  prune(now: number): void {
    while (this.entries.length > this.limits.keepLatest && this.entries.length > 0 && this.entries[0]!.atMs < now - this.limits.horizonMs)
      this.entries.shift();
  }
  size(): { entries: number; bytes: number } {
    return { entries: this.entries.length, bytes: this.bytes };
  }
}

type Op = { remember: [string, string, number] } | { prune: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      remember: fc.tuple(fc.constantFrom("a", "b", "c", "d", "e", "f", "g", "h"), fc.string({ maxLength: 40 }), fc.nat(1000)),
    }),
  },
  { weight: 1, arbitrary: fc.record({ prune: fc.nat(1500) }) },
);

describe("ReplyMemory", () => {
  it("evicts in the order replies were remembered, within its bounds, as a plain array would", () => {
    fc.assert(
      fc.property(
        fc.record({
          maxEntries: fc.integer({ min: 1, max: 6 }),
          maxBytes: fc.integer({ min: 20, max: 300 }),
          horizonMs: fc.nat(500),
          keepLatest: fc.nat(4),
        }),
        fc.array(op, { maxLength: 80 }),
        (limits, ops) => {
          const memory = new ReplyMemory(limits);
          const reference = new ReferenceMemory(limits);
          for (const o of ops) {
            if ("remember" in o) {
              memory.remember(...o.remember);
              reference.remember(...o.remember);
            } else {
              memory.prune(o.prune);
              reference.prune(o.prune);
            }
            expect(memory.size).toEqual(reference.size());
            expect(memory.size.entries).toBeLessThanOrEqual(limits.maxEntries);
            expect(memory.size.bytes).toBeLessThanOrEqual(limits.maxBytes);
            expect(memory.latest(limits.maxEntries)).toEqual(reference.entries.map((e) => [e.msgId, e.reply, e.atMs]));
            expect(memory.latest(2)).toEqual(reference.entries.slice(-2).map((e) => [e.msgId, e.reply, e.atMs]));
            for (const id of ["a", "b", "c", "d", "e", "f", "g", "h"])
              expect(memory.get(id)?.reply).toEqual(reference.entries.find((e) => e.msgId === id)?.reply);
          }
        },
      ),
    );
  });

  it("holding the latest replies aside until read, ends as a plain array would, or refuses to guess", () => {
    fc.assert(
      fc.property(
        fc.record({ maxEntries: fc.integer({ min: 1, max: 6 }), maxBytes: fc.integer({ min: 20, max: 300 }) }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.tuple(fc.constantFrom("a", "b", "c", "d", "e", "f", "g", "h"), fc.string({ maxLength: 40 }), fc.nat(1000)), {
          maxLength: 80,
        }),
        (limits, extra, remembers) => {
          const memory = new ReplyMemory(limits, undefined, { tail: limits.maxEntries + extra });
          const reference = new ReferenceMemory({ ...limits, horizonMs: 0, keepLatest: 0 });
          for (const r of remembers) {
            memory.remember(...r);
            reference.remember(...r);
          }
          let latest: unknown;
          try {
            latest = memory.latest(limits.maxEntries);
          } catch {
            // Only the same id told twice can leave the replies held aside under every bound after some were let go.
            expect(new Set(remembers.map(([id]) => id)).size).toBeLessThan(remembers.length);
            return;
          }
          expect(latest).toEqual(reference.entries.map((e) => [e.msgId, e.reply, e.atMs]));
          expect(memory.size).toEqual(reference.size());
          expect(memory.rememberedCount).toBe(remembers.length);
        },
      ),
    );
    const distinct = new ReplyMemory({ maxEntries: 3 }, undefined, { tail: 4 });
    for (let i = 0; i < 100; i++) distinct.remember(`m${i}`, { i }, i);
    expect(distinct.latest(3)).toEqual([97, 98, 99].map((i) => [`m${i}`, { i }, i]));
    expect(() => new ReplyMemory({ maxEntries: 3 }, undefined, { tail: 3 })).toThrow();
  });

  it("drops the oldest replies past its count or byte bound, and past the horizon all but the latest few", () => {
    const byCount = new ReplyMemory({ maxEntries: 3 });
    for (let i = 0; i < 5; i++) byCount.remember(`m${i}`, { i }, i);
    expect(byCount.get("m1")).toBeUndefined();
    expect(byCount.get("m4")?.reply).toEqual({ i: 4 });
    expect(byCount.size.entries).toBe(3);

    const byBytes = new ReplyMemory({ maxBytes: 1000 });
    for (let i = 0; i < 50; i++) byBytes.remember(`m${i}`, { text: "x".repeat(100) }, i);
    expect(byBytes.size.bytes).toBeLessThanOrEqual(1000);
    expect(byBytes.get("m49")).toBeDefined();

    const byTime = new ReplyMemory({ horizonMs: 10, keepLatest: 2 });
    for (let i = 0; i < 5; i++) byTime.remember(`m${i}`, {}, i);
    byTime.prune(1000);
    expect(byTime.size.entries).toBe(2);
    expect(byTime.get("m4")).toBeDefined();
  });

  it("keeps a reply owed by an event as the event, rendered once when first asked for, within the same bounds", () => {
    const rendered: string[] = [];
    const memory = new ReplyMemory({ maxEntries: 2 }, (id, recorded) => {
      rendered.push(id);
      return { id, seq: recorded.seq };
    });
    const event = (seq: number) => ({
      seq,
      event: { type: "T", v: 1 as const, at: "2026-01-01T00:00:00.000Z", kind: "lock" as const, id: "x", data: {} },
    });
    memory.rememberEvent("m1", "a", event(1), 1, 100);
    memory.rememberEvent("m2", "b", event(2), 2, 100);
    memory.remember("m3", { made: true }, 3);
    expect(rendered).toEqual([]);
    expect(memory.get("m1")).toBeUndefined();
    expect(memory.get("m2")).toEqual({ reply: { id: "b", seq: 2 }, atMs: 2 });
    expect(memory.get("m2")).toEqual({ reply: { id: "b", seq: 2 }, atMs: 2 });
    expect(memory.latest(2)).toEqual([
      ["m2", { id: "b", seq: 2 }, 2],
      ["m3", { made: true }, 3],
    ]);
    expect(rendered).toEqual(["b"]);
    // The event's encoded size stands for what the entry holds.
    expect(memory.size.bytes).toBe(2 + 100 + 16 + 2 + approximateSize({ made: true }) + 16);
    expect(() => new ReplyMemory().rememberEvent("m", "a", event(1), 1, 1)).toThrow();
  });

  it.each([
    ["taken in as it comes", {}],
    ["held aside until first read", { tail: 3 }],
  ])("keeps a reply owed by a stored event as its bytes, decoded and rendered once when first asked for (%s)", (_how, options) => {
    const rendered: RecordedEvent[] = [];
    const memory = new ReplyMemory(
      { maxEntries: 2 },
      (id, recorded) => {
        rendered.push(recorded);
        return { id, generation: (recorded.event.data as { generation: number }).generation };
      },
      options,
    );
    const event = (generation: number) =>
      encodeEvent({ type: "LockReleased", v: 1, at: "2026-01-01T00:00:00.000Z", kind: "lock", id: "a", data: { owner: "w", generation } });
    // Each a view into one buffer, as a batch's payloads are.
    const batch = new Uint8Array([...event(1), ...event(2), ...event(3)]);
    const size = event(1).length;
    for (const g of [1, 2, 3]) memory.rememberStored(`m${g}`, "a", batch.subarray((g - 1) * size, g * size), 10 + g, g);
    expect(rendered).toEqual([]);
    expect(memory.get("m1")).toBeUndefined();
    expect(memory.get("m2")).toEqual({ reply: { id: "a", generation: 2 }, atMs: 2 });
    expect(memory.latest(2)).toEqual([
      ["m2", { id: "a", generation: 2 }, 2],
      ["m3", { id: "a", generation: 3 }, 3],
    ]);
    // Rendered from the event as a fold decodes it, at its own sequence, once each.
    expect(rendered.map((r) => [r.seq, r.event.type, r.event.id])).toEqual([
      [12, "LockReleased", "a"],
      [13, "LockReleased", "a"],
    ]);
    expect(memory.size.bytes).toBe(2 * (2 + event(2).length + 16));
    expect(() => new ReplyMemory().rememberStored("m", "a", event(1), 1, 1)).toThrow();
  });
});
