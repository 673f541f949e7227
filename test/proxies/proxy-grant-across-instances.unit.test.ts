/**
 * One proxy acquisition retried on another service instance while its first
 * grant is still held by the stream's leader (proposed, not stored: a
 * partition took the quorum). A proxy grant's message id is the kind's, so
 * JetStream answers the retry's copy "duplicate at sequence 0", whichever
 * proxy it asks; that copy is the other instance's and may land on another
 * proxy's subject, where no expected sequence stops it. The retry must not
 * work around it with a variant id: the request would be granted twice.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { isInDoubt } from "../../src/actors/actor-runtime.ts";
import { LogUnavailableError, WrongLastSequenceError, type AppendOptions, type AppendResult } from "../../src/events/event-log.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { ManualClock } from "../../src/actors/clock.ts";
import { PROXY_T0, startProxyHarness, type ProxyHarness } from "../support/proxy-harness.ts";

/**
 * The stream as a clustered nats-server 2.10 leader keeps it: a message id
 * is taken when the leader proposes the message (a repeat then is a
 * duplicate at sequence 0 until it is stored) and stays taken when the
 * stored copy is refused by its expected sequence; appends to a subject
 * ending in `cutOff` are proposed but not stored, their writers told
 * nothing, until `heal()` stores them in order with only their expected
 * sequence checked (a cluster checks ids when it proposes).
 */
class LeaderLog extends MemoryEventLog {
  cutOff: string | undefined;
  /** Runs when an append is answered as a duplicate at sequence 0, before the writer hears of it. */
  onTaken: (() => Promise<void>) | undefined;
  private readonly taken = new Set<string>();
  private readonly held: { subject: string; payload: Uint8Array; options: AppendOptions }[] = [];

  override async append(subject: string, payload: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    if (this.taken.has(options.msgId)) {
      await this.onTaken?.();
      return { seq: 0, duplicate: true };
    }
    if (this.cutOff !== undefined && subject.endsWith(this.cutOff)) {
      this.taken.add(options.msgId);
      this.held.push({ subject, payload, options });
      throw new LogUnavailableError("no quorum (test)", true);
    }
    try {
      return await super.append(subject, payload, options);
    } catch (e) {
      if (e instanceof WrongLastSequenceError) this.taken.add(options.msgId);
      throw e;
    }
  }

  /** The quorum is back: the held proposals are stored in order, each only if its expected sequence still holds. */
  async heal(): Promise<void> {
    this.cutOff = undefined;
    for (const { subject, payload, options } of this.held.splice(0)) {
      this.taken.delete(options.msgId);
      await super.append(subject, payload, options).catch((e: unknown) => {
        if (!(e instanceof WrongLastSequenceError)) throw e;
      });
    }
  }
}

const grantsOf = (h: ProxyHarness, requestId: string) =>
  h
    .events()
    .filter((e) => e.event.type === "ProxyLeaseGranted" && e.event.requestId === requestId)
    .map((e) => e.event.id);

/** Two instances on one {@link LeaderLog}, with p1 (faster) and p2 registered, each of `maxLeases`; both stop when the test ends. */
async function twoInstances(maxLeases: number): Promise<{ log: LeaderLog; a: ProxyHarness; b: ProxyHarness }> {
  const clock = new ManualClock(PROXY_T0);
  const log = new LeaderLog({ now: () => clock.now(), dedupWindowMs: 120_000 });
  const a = await startProxyHarness({ clock, log, newId: () => `a-${Math.random()}` });
  onTestFinished(() => a.stop());
  const b = await startProxyHarness({ clock, log, newId: () => `b-${Math.random()}` });
  onTestFinished(() => b.stop());
  expect((await a.call("register", { proxy: "p1", maxLeases, latencyMs: 10 })).ok).toBe(true);
  expect((await a.call("register", { proxy: "p2", maxLeases, latencyMs: 20 })).ok).toBe(true);
  return { log, a, b };
}

/** a's grant of r1 goes to p1 and is held by the leader (a: in doubt); then p2 ranks first, p1's subject unmoved. */
async function heldOnP1ThenP2First(log: LeaderLog, a: ProxyHarness, b: ProxyHarness): Promise<void> {
  log.cutOff = ".p1";
  expect(isInDoubt(await a.call("acquire", { ttlMs: 60_000, requestId: "r1" }))).toBe(true);
  expect((await b.call("register", { proxy: "p2", maxLeases: 2, latencyMs: 5 })).ok).toBe(true);
}

describe("a proxy acquisition retried on another instance while its first grant is held by the leader", () => {
  it("is granted once, on the proxy of the first copy, however the instances rank the proxies", async () => {
    const { log, a, b } = await twoInstances(2);
    await heldOnP1ThenP2First(log, a, b);
    const retry = await b.call("acquire", { ttlMs: 60_000, requestId: "r1" });
    expect(retry.ok).toBe(false);
    expect(grantsOf(b, "r1")).toEqual([]);
    await log.heal();
    const after = await b.call("acquire", { ttlMs: 60_000, requestId: "r1" });
    expect(after).toMatchObject({ ok: true, reply: { lease: { proxy: "p1" } } });
    expect(grantsOf(b, "r1")).toEqual(["p1"]);
  });

  it("answers with the first copy's grant when it is stored while the retry looks", async () => {
    const { log, a, b } = await twoInstances(2);
    await heldOnP1ThenP2First(log, a, b);
    log.onTaken = () => log.heal();
    expect(await b.call("acquire", { ttlMs: 60_000, requestId: "r1" })).toMatchObject({ ok: true, reply: { lease: { proxy: "p1" } } });
    expect(grantsOf(b, "r1")).toEqual(["p1"]);
  });

  it("still takes the next proxy under a variant after its own copy on a full proxy was refused by its expected sequence", async () => {
    const { log, a, b } = await twoInstances(1);
    // b fills p1 while a decides on it: a's copy is refused (and its id taken), then p1 is full, then p2.
    const append = log.append.bind(log);
    let raced = false;
    log.append = async (subject, payload, options) => {
      if (!raced && subject.endsWith(".p1") && options.msgId.includes("r-a")) {
        raced = true;
        expect(await b.call("acquire", { ttlMs: 60_000, requestId: "r-b" })).toMatchObject({
          ok: true,
          reply: { lease: { proxy: "p1" } },
        });
      }
      return append(subject, payload, options);
    };
    expect(await a.call("acquire", { ttlMs: 60_000, requestId: "r-a" })).toMatchObject({ ok: true, reply: { lease: { proxy: "p2" } } });
    expect(raced).toBe(true);
    expect(grantsOf(a, "r-a")).toEqual(["p2"]);
  });
});
