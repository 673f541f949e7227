/**
 * client.elect against a real service. Two contenders hand leadership back
 * and forth, by resigning and by crashing (their connection closed, so the
 * lease runs out): no two of them ever believe they lead at the same time,
 * and each term's generation is higher than the last. A leader paused past
 * its lease's TTL (its keeper's clock and timers frozen, then resumed) is
 * told onDeposed as soon as it runs again, before any request, and a write it
 * then makes with its old generation is refused by a fenced resource that the
 * new leader, with a higher generation, has written to.
 */
import { describe, expect, it } from "vitest";
import {
  Election,
  type DeposedTerm,
  type ElectionLockApi,
  type KeeperTimers,
  type LeaderTerm,
  type LeaseholdClient,
} from "../../src/index.ts";
import { useClientHarness } from "./harness.ts";

const h = useClientHarness();

/** A resource that keeps the highest generation it has seen and refuses writes with a lower one (fencing). */
class FencedResource {
  highest = 0;
  readonly accepted: { generation: number; value: string }[] = [];
  write(generation: number, value: string): boolean {
    if (generation < this.highest) return false;
    this.highest = generation;
    this.accepted.push({ generation, value });
    return true;
  }
}

/** Keeper timers that stand still until advanced: the keeper's process is paused in between. */
class PausableTimers implements KeeperTimers {
  private t = 0;
  private nextId = 0;
  private readonly due = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    this.due.set(++this.nextId, { at: this.t + ms, fn });
    return this.nextId;
  }
  clearTimeout(handle: unknown): void {
    this.due.delete(handle as number);
  }
  /** Moves the clock on by `ms` and runs what came due, earliest first, as a resumed event loop would. */
  resume(ms: number): void {
    this.t += ms;
    for (;;) {
      const next = [...this.due.entries()].filter(([, d]) => d.at <= this.t).sort((a, b) => a[1].at - b[1].at)[0];
      if (next === undefined) return;
      this.due.delete(next[0]);
      next[1].fn();
    }
  }
}

/** Resolves when `check` holds, polling every 5 ms; fails after `ms`. */
async function until(check: () => boolean, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

interface Term {
  readonly who: string;
  readonly generation: number;
  readonly from: number;
  to?: number;
  reason?: string;
}

describe("client.elect", () => {
  it("two contenders never both believe they lead, across resignations and crashes, and terms rise", async () => {
    const { prefix } = await h.start({ lockTtlMs: 400 });
    const terms: Term[] = [];
    const running = new Map<string, { election: Election; client: LeaseholdClient }>();
    let handovers = 0;
    const start = async (who: string) => {
      const client = await h.client(prefix);
      const election = client.elect("leader", {
        owner: who,
        ttlMs: 400,
        retryMs: 20,
        onElected: (term: LeaderTerm) => {
          terms.push({ who, generation: term.generation, from: performance.now() });
          // Lead for a while, then resign (even terms) or crash (odd terms: the connection goes, the lease runs out).
          setTimeout(() => {
            handovers++;
            if (term.generation % 2 === 0) void election.stop().then(() => start(who));
            else void crash(who);
          }, 120);
        },
        onDeposed: (term: DeposedTerm) => {
          const open = terms.findLast((t) => t.who === who && t.generation === term.generation)!;
          open.to = performance.now();
          open.reason = term.reason;
        },
      });
      running.set(who, { election, client });
    };
    const crash = async (who: string) => {
      const { election } = running.get(who)!;
      // Its connection is gone: renewals fail, the keeper gives up at its local deadline, the lease expires.
      await closeConnectionOf(running.get(who)!.client);
      await until(() => terms.findLast((t) => t.who === who)?.to !== undefined, 2000, `${who} deposed after its crash`);
      await election.stop();
      await start(who);
    };
    await start("a");
    await start("b");
    await until(() => handovers >= 6, 15_000, "six handovers");
    for (const { election } of running.values()) await election.stop();

    expect(terms.length).toBeGreaterThanOrEqual(6);
    for (const [i, t] of terms.entries()) {
      expect(t.to, JSON.stringify(t)).toBeDefined();
      if (i === 0) continue;
      const before = terms[i - 1]!;
      // Never two leaders: a term starts only after the previous one ended (in the believers' own view).
      expect(t.from, JSON.stringify([before, t])).toBeGreaterThanOrEqual(before.to!);
      expect(t.generation).toBeGreaterThan(before.generation);
    }
    expect(terms.filter((t) => t.reason === "expired").length).toBeGreaterThan(0);
    expect(terms.filter((t) => t.reason === "stopped").length).toBeGreaterThan(0);
  });

  it("a leader paused past its TTL is deposed as soon as it runs again, and its old generation is fenced off", async () => {
    const { client, prefix } = await h.start({ lockTtlMs: 300 });
    const resource = new FencedResource();
    const frozen = new PausableTimers();
    const events: string[] = [];
    let termA: LeaderTerm | undefined;
    let deposedA: DeposedTerm | undefined;
    let renewsByA = 0;
    // a's lock endpoints, counting its renew requests.
    const spied: ElectionLockApi = {
      acquire: (...args) => client.lock.acquire(...args),
      release: (...args) => client.lock.release(...args),
      get: (...args) => client.lock.get(...args),
      watch: (...args) => client.lock.watch(...args),
      renew: (...args) => {
        renewsByA++;
        return client.lock.renew(...args);
      },
    };
    // a's keeper clock stands still from its start (t = 0, before its acquire is
    // sent); when it runs again, as much time has passed for it as since then.
    const startedAt = performance.now();
    const a = new Election(
      spied,
      "leader",
      {
        owner: "a",
        ttlMs: 300,
        timers: frozen,
        onElected: (term) => {
          termA = term;
          events.push(`a elected ${term.generation}`);
          expect(resource.write(term.generation, "a's first write")).toBe(true);
        },
        onDeposed: (term) => {
          deposedA = term;
          events.push(`a deposed ${term.generation} (${term.reason})`);
        },
      },
      client.timeoutMs,
    );
    await until(() => termA !== undefined, 5000, "a elected");

    // a is paused (its keeper's clock stands still): b waits for the lease to run out on the server, then leads.
    const other = await h.client(prefix);
    let termB: LeaderTerm | undefined;
    const b = other.elect("leader", {
      owner: "b",
      ttlMs: 300,
      onElected: (term) => {
        termB = term;
        events.push(`b elected ${term.generation}`);
        expect(resource.write(term.generation, "b's write")).toBe(true);
      },
      onDeposed: () => undefined,
    });
    await until(() => termB !== undefined, 5000, "b elected");
    expect(termB!.generation).toBeGreaterThan(termA!.generation);

    // a runs again: the first thing that happens is onDeposed, before any renew is sent.
    frozen.resume(performance.now() - startedAt);
    expect(deposedA).toEqual({ name: "leader", owner: "a", generation: termA!.generation, reason: "expired" });
    expect(renewsByA).toBe(0);
    expect(termA!.signal.aborted).toBe(true);
    expect(a.leading).toBe(false);
    // A write a makes with its old generation anyway is refused by the fenced resource.
    expect(resource.write(termA!.generation, "a's stale write")).toBe(false);
    expect(resource.accepted.map((w) => w.value)).toEqual(["a's first write", "b's write"]);
    expect(events).toEqual([
      `a elected ${termA!.generation}`,
      `b elected ${termB!.generation}`,
      `a deposed ${termA!.generation} (expired)`,
    ]);
    await a.stop();
    await b.stop();
  });
});

/** Closes the NATS connection a client was made with (a crash, as far as the service can tell). */
async function closeConnectionOf(client: LeaseholdClient): Promise<void> {
  await (client as unknown as { transport: { nc: { close(): Promise<void> } } }).transport.nc.close();
}
