/**
 * A lock decision is three frames from the turn that asks for it: the
 * runtime's turn (`decideAndAppend`) calls the kind's logic (`lockLogic`'s
 * decide, reached in one hop: the runtime holds it bound, not wrapped), which runs the statechart's compiled transition, which calls the
 * decider its action names (`decideAcquire`). Counted on a real stack: the
 * command is a proxy that records where its `owner` is read.
 */
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { ActorRuntime } from "../../src/actors/actor-runtime.ts";
import { Subjects } from "../../src/contract/subjects.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { lockLogic } from "../../src/lock/logic.ts";
import type { LockCommand } from "../../src/lock/commands.ts";
import { DEFAULT_SETTINGS } from "../support/lock-given.ts";

/** The function names on a V8 stack, innermost first, without the `Error` line and the frame that captured it. */
function framesOf(stack: string): string[] {
  return stack
    .split("\n")
    .slice(2)
    .map((line) => (/at (?:async )?(\S+)/.exec(line)?.[1] ?? "?").replace(/^Object\./, ""));
}

describe("a lock decision", () => {
  it("is three frames below the runtime's turn: the lock logic, the compiled transition, the decider", async () => {
    const log = new MemoryEventLog({ now: () => Date.now(), dedupWindowMs: 120_000 });
    const runtime = new ActorRuntime({
      ...{ log, subjects: new Subjects("t"), clock: { now: () => Date.now() } },
      ...{ logger: pino({ level: "silent" }), dedupWindowMs: 120_000 },
    });
    await runtime.register(lockLogic({ claimWindowMs: 5000, ...DEFAULT_SETTINGS })).start();
    const stacks: string[] = [];
    const command = new Proxy<LockCommand>(
      { op: "acquire", owner: "alice", ttlMs: 10_000 },
      {
        get(target, key, receiver) {
          if (key === "owner") stacks.push(new Error("owner read").stack ?? "");
          return Reflect.get(target, key, receiver) as unknown;
        },
      },
    );
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 50;
    try {
      const result = await runtime.execute("lock", "l", command);
      expect(result.ok).toBe(true);
    } finally {
      Error.stackTraceLimit = limit;
    }
    const deciding = stacks.map(framesOf).find((frames) => frames[0] === "decideAcquire");
    expect(deciding, "the decider reads the owner").toBeDefined();
    // The turn's step that decides and appends (src/actors/actor-runtime.ts).
    const turn = deciding!.findIndex((name) => name === "decideAndAppend");
    expect(turn, `the turn on the stack: ${deciding!.join(" < ")}`).toBeGreaterThan(0);
    expect(deciding!.slice(0, turn)).toEqual(["decideAcquire", "decideContext", "decide"]);
  });
});
