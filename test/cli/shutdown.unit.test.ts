/**
 * serve's stop: the reverse of start-up, each step bounded, the whole
 * bounded by a watchdog that exits anyway and says what was left.
 */
import { describe, expect, it, vi } from "vitest";
import { pino } from "pino";
import { Shutdown } from "../../src/cli/shutdown.ts";

function recording() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: "debug" }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  return { logger, lines };
}

describe("Shutdown", () => {
  it("stops in the reverse order of start-up, once, then exits with the code", async () => {
    const { logger } = recording();
    const exits: number[] = [];
    const order: string[] = [];
    const shutdown = new Shutdown({ logger, exit: (code) => void exits.push(code) });
    for (const name of ["nats-server", "connection", "service"]) {
      shutdown.add(name, () => {
        order.push(name);
        return Promise.resolve();
      });
    }
    expect(shutdown.stopping).toBe(false);
    await Promise.all([shutdown.begin("SIGTERM", 0), shutdown.begin("SIGINT", 0)]);
    expect(shutdown.stopping).toBe(true);
    expect(order).toEqual(["service", "connection", "nats-server"]);
    expect(exits).toEqual([0]);
  });

  it("gives a step no more than its own limit, and goes on with the next", async () => {
    vi.useFakeTimers();
    try {
      const { logger, lines } = recording();
      const exits: number[] = [];
      const shutdown = new Shutdown({ logger, exit: (code) => void exits.push(code), now: () => Date.now() });
      const ran: string[] = [];
      shutdown.add(
        "nats-server",
        (ms) => {
          ran.push(`nats-server ${ms}`);
          return Promise.resolve();
        },
        1500,
      );
      shutdown.add("service", () => new Promise<void>(() => undefined), 6000);
      const done = shutdown.begin("SIGTERM", 0);
      await vi.advanceTimersByTimeAsync(6000);
      await done;
      expect(ran).toEqual(["nats-server 1500"]);
      expect(lines.find((l) => l.msg === "a stop step did not finish; going on")).toMatchObject({ step: "service", outcome: "timed out" });
      expect(exits).toEqual([0]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("exits when the budget runs out, naming what was left", async () => {
    vi.useFakeTimers();
    try {
      const { logger, lines } = recording();
      const exits: number[] = [];
      const shutdown = new Shutdown({ logger, budgetMs: 10_000, exit: (code) => void exits.push(code), now: () => 0 });
      shutdown.add("nats-server", () => new Promise<void>(() => undefined));
      shutdown.add("service", () => new Promise<void>(() => undefined), 60_000);
      void shutdown.begin("SIGTERM", 0);
      await vi.advanceTimersByTimeAsync(9_999);
      expect(exits).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(exits).toEqual([0]);
      expect(lines.find((l) => l.msg === "stop took too long; exiting anyway")).toMatchObject({ left: ["service", "nats-server"] });
    } finally {
      vi.useRealTimers();
    }
  });

  it("runs a step added while stopping (something that started meanwhile)", async () => {
    const { logger } = recording();
    const exits: number[] = [];
    const shutdown = new Shutdown({ logger, exit: (code) => void exits.push(code) });
    const order: string[] = [];
    shutdown.add("first", () => {
      order.push("first");
      shutdown.add("late", () => {
        order.push("late");
        return Promise.resolve();
      });
      return Promise.resolve();
    });
    await shutdown.begin("SIGTERM", 2);
    expect(order).toEqual(["first", "late"]);
    expect(exits).toEqual([2]);
  });
});
