/**
 * The lock's statechart as the runtime runs it (src/actors/kind-logic.ts)
 * against XState's own `machine.transition`, over paths fast-check generates:
 * commands at rising instants, the events those commands decided folded back
 * as the stream would record them, and events that break the history
 * (generation gaps, renewals of nothing, unparsable and foreign messages,
 * resets). After every step both must be in the same state with the same
 * context, emit the same decision, and the state must be the one the context
 * records (so a projection that keeps contexts only loses nothing).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createActor, type AnyMachineSnapshot, type EventObject } from "xstate";
import { encodeEvent, type EventEnvelope, type HistoryEntry } from "../../src/events/envelope.ts";
import { decodeEvent } from "../../src/events/decode.ts";
import { compileFlatMachine } from "../../src/actors/kind-logic.ts";
import { lockMachine, lockStateValue, type LockMachineEvent } from "../../src/lock/logic.ts";
import type { LockCommand, LockSettings } from "../../src/lock/commands.ts";
import type { DecidedEvent } from "../../src/actors/kind-logic.ts";
import { recordedEventOf } from "../../src/actors/kind-logic.ts";
import { etagOf, initialLockState, leaseEtag, type LockState } from "../../src/lock/state.ts";
import { lockEventSchemas } from "../../src/lock/events.ts";

const SETTINGS: LockSettings = { lockTtlMs: 1000, maxTtlMs: 5000, claimWindowMs: 200 };
const T0 = Date.parse("2026-12-04T00:00:00.000Z");
const LOCK_TYPES: ReadonlySet<string> = new Set(Object.keys(lockEventSchemas));

/** XState's own way to run the machine: a real actor scope whose emitted events are captured. */
function xstateRunner() {
  const machine = lockMachine(SETTINGS);
  const emitted: EventObject[] = [];
  const self = createActor(machine, { input: { id: "x" } });
  const scope = {
    self,
    id: "x",
    sessionId: "x",
    logger: () => undefined,
    defer: (fn: () => void) => fn(),
    emit: (event: EventObject) => emitted.push(event),
    stopChild: () => undefined,
    system: self.system,
    actionExecutor: (action: { exec?: (info: unknown, params: unknown) => void; info: unknown; params: unknown }) =>
      action.exec?.(action.info, action.params),
  } as unknown as Parameters<typeof machine.transition>[2];
  let snapshot: AnyMachineSnapshot = machine.getInitialSnapshot(scope, { id: "x" });
  return {
    step(event: LockMachineEvent): EventObject[] {
      emitted.length = 0;
      snapshot = machine.transition(snapshot as never, event, scope);
      return [...emitted];
    },
    get value(): unknown {
      return snapshot.value as unknown;
    },
    get context(): LockState {
      return (snapshot as { context: LockState }).context;
    },
  };
}

function flatRunner() {
  const logic = compileFlatMachine<LockState, LockMachineEvent, { id: string }>(lockMachine(SETTINGS), {
    valueOf: lockStateValue,
    initialContext: (input) => initialLockState(input.id),
  });
  const emitted: EventObject[] = [];
  const scope = { emit: (event: EventObject) => emitted.push(event) };
  let snapshot = logic.getInitialSnapshot(undefined, { id: "x" });
  // The same path from context to context (what the runtime and the projections run): it must agree at every step.
  const emittedByContext: EventObject[] = [];
  const contextScope = { emit: (event: EventObject) => emittedByContext.push(event) };
  let context = snapshot.context;
  return {
    step(event: LockMachineEvent): EventObject[] {
      emitted.length = 0;
      emittedByContext.length = 0;
      const before = context;
      snapshot = logic.transition(snapshot, event, scope as never);
      context = logic.transitionContext(context, event, contextScope as never);
      expect(context).toEqual(snapshot.context);
      expect(emittedByContext).toEqual(emitted);
      // A command's decision as the runtime takes it (the decider its action names, called directly) is the emitted one.
      if ("command" in event) expect(logic.decideContext(before, event)).toEqual((emitted[0] as { decision?: unknown }).decision);
      return [...emitted];
    },
    get value(): string {
      return snapshot.value;
    },
    get context(): LockState {
      return snapshot.context;
    },
  };
}

/** A command, or one that names the lock's current etag when it is made. */
type CommandChoice = { readonly command: LockCommand | ((etag: string) => LockCommand) };
type Step =
  | { readonly kind: "command"; readonly c: CommandChoice; readonly advanceMs: number }
  | { readonly kind: "record" }
  | { readonly kind: "hostile"; readonly event: "gap" | "renewNothing" | "releaseOther" | "reset" | "unparsable" | "foreign" };

const owner = fc.constantFrom("alice", "bob");
const ttl = fc.option(fc.constantFrom(300, 1000, 4000, 6000), { nil: undefined });
const etagChoice = fc.constantFrom("current", "stale");
const command: fc.Arbitrary<CommandChoice> = fc.oneof(
  fc.record({ owner, ttlMs: ttl, waitMs: fc.option(fc.constantFrom(0, 500, 2000), { nil: undefined }) }).map((c): CommandChoice => ({
    command: { op: "acquire", ...c, requestId: "r-" + c.owner },
  })),
  fc.record({ owner, ttlMs: ttl, which: etagChoice }).map((c): CommandChoice => ({
    command: (etag: string) => ({ op: "renew", owner: c.owner, etag: c.which === "current" ? etag : "zzzzzzzz", ttlMs: c.ttlMs }),
  })),
  etagChoice.map((which): CommandChoice => ({
    command: (etag: string) => ({ op: "release", etag: which === "current" ? etag : "zzzzzzzz" }),
  })),
  fc.constant<CommandChoice>({ command: { op: "get" } }),
  fc.constant<CommandChoice>({ command: { op: "reset" } }),
  fc.record({ owner, place: fc.integer({ min: 1, max: 40 }) }).map((c): CommandChoice => ({
    command: { op: "claim", owner: c.owner, place: c.place, giveUpAt: T0 + 10_000, waitingSince: T0 },
  })),
);
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.tuple(command, fc.integer({ min: 0, max: 1500 })).map(([c, advanceMs]): Step => ({ kind: "command", c, advanceMs })),
  },
  { weight: 4, arbitrary: fc.constant<Step>({ kind: "record" }) },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom("gap", "renewNothing", "releaseOther", "reset", "unparsable", "foreign")
      .map((event): Step => ({ kind: "hostile", event })),
  },
);

describe("the lock statechart, run flat, against XState's own transition", () => {
  it("agrees on state, context and emitted decision along generated paths, and its state is the one its context records", () => {
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => {
        const xs = xstateRunner();
        const flat = flatRunner();
        let now = T0;
        let seq = 0;
        let lastDecision: DecidedEvent | undefined;
        const apply = (event: LockMachineEvent) => {
          const a = xs.step(event);
          const b = flat.step(event);
          expect(b).toEqual(a);
          expect(flat.value).toBe(xs.value);
          expect(flat.context).toEqual(xs.context);
          expect(lockStateValue(flat.context)).toBe(xs.value);
          return a as DecidedEvent[];
        };
        const envelope = (type: string, data: unknown): EventEnvelope => ({
          type,
          v: 1,
          at: new Date(now).toISOString(),
          kind: "lock",
          id: "x",
          data,
        });
        const fold = (env: EventEnvelope | string) => {
          seq++;
          const entry: HistoryEntry =
            typeof env === "string"
              ? decodeEvent(new TextEncoder().encode(env), seq, undefined)
              : decodeEvent(encodeEvent(env), seq, undefined);
          apply(recordedEventOf(entry, LOCK_TYPES));
        };
        for (const s of steps) {
          if (s.kind === "command") {
            now += s.advanceMs;
            const etag = xs.context.lease === null ? etagOf(seq) : leaseEtag(xs.context.lease);
            const c = typeof s.c.command === "function" ? s.c.command(etag) : s.c.command;
            const emitted = apply({ type: c.op, command: c, now });
            expect(emitted).toHaveLength(1);
            lastDecision = emitted[0];
          } else if (s.kind === "record") {
            const d = lastDecision?.decision;
            lastDecision = undefined;
            if (d?.outcome === "append") fold(envelope(d.type, d.data));
          } else {
            const g = xs.context.generation;
            const expiresAt = new Date(now + 1000).toISOString();
            if (s.event === "gap")
              fold(envelope("LockAcquired", { owner: "eve", generation: g + 2, ttlMs: 1000, expiresAt, previousOwner: "" }));
            if (s.event === "renewNothing") fold(envelope("LockRenewed", { owner: "eve", generation: g + 7, ttlMs: 1000, expiresAt }));
            if (s.event === "releaseOther") fold(envelope("LockReleased", { owner: "eve", generation: g + 7 }));
            if (s.event === "reset") fold(envelope("LockReset", { generation: g }));
            if (s.event === "unparsable") fold("{not json");
            if (s.event === "foreign") fold(envelope("ProxyRegistered", { url: "http://p", cap: 1 }));
          }
        }
      }),
      { numRuns: 200 },
    );
  }, 60_000);

  it("refuses, when the logic is built, a machine outside the flat subset it can run", () => {
    const nested = lockMachine(SETTINGS).provide({});
    expect(() => compileFlatMachine(nested, { valueOf: lockStateValue, initialContext: () => initialLockState("x") })).not.toThrow();
    const withEntry = { ...nested, root: { ...nested.root, entry: [() => undefined] } } as unknown as typeof nested;
    expect(() => compileFlatMachine(withEntry, { valueOf: lockStateValue, initialContext: () => initialLockState("x") })).toThrow(
      /not flat/,
    );
  });
});
