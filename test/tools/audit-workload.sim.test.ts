/**
 * The audit on a clean history of 100,000 events from a simulated workload
 * of every kind (the real deciders, selector, read models and sweeps on the
 * in-memory log): no violation, and the time it took is printed. Then one
 * forged event appended to that same history is found, so a clean result is
 * not the audit seeing nothing.
 */
import { describe, expect, it } from "vitest";
import { encodeEvent, type EventEnvelope } from "../../src/events/envelope.ts";
import { type LockEvent } from "../../src/lock/events.ts";
import { auditStream, type Violation } from "../../src/tools/audit.ts";
import { simulateWorkload } from "./support/workload.ts";

const EVENTS = 100_000;

describe("audit of a simulated workload", () => {
  it(`finds no violation in ${EVENTS} events of every kind, and finds one forged acquisition appended to them`, async () => {
    const generated = Date.now();
    const sim = await simulateWorkload({ events: EVENTS, seed: 7 });
    const generationMs = Date.now() - generated;
    const { log, subjects, config } = sim;

    const types = new Map<string, number>();
    const decoder = new TextDecoder();
    for (const m of log.messages.slice(0, EVENTS)) {
      const type = (JSON.parse(decoder.decode(m.payload)) as EventEnvelope).type;
      types.set(type, (types.get(type) ?? 0) + 1);
    }
    // Every event type the contract names occurs: the history exercises every rule's happy path.
    expect([...types.keys()].sort()).toEqual(
      [
        "HostStateSet",
        "LockAcquired",
        "LockReleased",
        "LockRenewed",
        "LockReset",
        "ProxyCooldownStarted",
        "ProxyLeaseGranted",
        "ProxyLeaseReleased",
        "ProxyRegistered",
        "ProxyRemoved",
        "RouteCandidatesSeen",
        "RouteLeaseExpired",
        "RouteLeasePlaced",
        "RouteLeaseTouched",
        "RoutePinned",
        "RouteReleased",
        "RouteUnpinned",
      ].sort(),
    );

    const violations: Violation[] = [];
    const options = { cooldownMs: config.cooldownMs, maxTtlMs: config.maxTtlMs, onViolation: (v: Violation) => violations.push(v) };
    const summary = await auditStream(log.readStream({ toSeq: EVENTS }), subjects, options);
    console.log(
      `audit of ${summary.read} simulated events (in memory): ${summary.elapsedMs} ms, ${Math.round(summary.read / (summary.elapsedMs / 1000))} events/s; ` +
        `generating them took ${generationMs} ms; event types: ${JSON.stringify(Object.fromEntries(types))}`,
    );
    expect(violations.slice(0, 5)).toEqual([]);
    expect(summary).toMatchObject({ read: EVENTS, checked: EVENTS, firstSeq: 1, lastSeq: EVENTS, violations: 0, byRule: {} });
    expect(summary.actors.lock).toBeGreaterThan(10);
    expect(summary.actors.proxy).toBeGreaterThan(4);
    expect(summary.actors.route).toBeGreaterThan(10);

    // Forge an acquisition of a lock whose lease is still live at the end of the history.
    const lastAt = new Map<string, LockEvent>();
    for (const m of log.messages) {
      const e = JSON.parse(decoder.decode(m.payload)) as EventEnvelope;
      if (e.kind === "lock") lastAt.set(e.id, e as LockEvent);
    }
    const now = sim.clock.now();
    const live = [...lastAt.values()].find(
      (e) => (e.type === "LockAcquired" || e.type === "LockRenewed") && Date.parse(e.data.expiresAt) > now,
    ) as Extract<LockEvent, { type: "LockAcquired" | "LockRenewed" }> | undefined;
    expect(live, "the workload ends with some lock held").toBeDefined();
    const forged: LockEvent = {
      type: "LockAcquired",
      v: 1,
      at: new Date(now).toISOString(),
      kind: "lock",
      id: live!.id,
      data: {
        owner: "intruder",
        generation: live!.data.generation + 1,
        ttlMs: 1000,
        expiresAt: new Date(now + 1000).toISOString(),
        previousOwner: live!.data.owner,
      },
    };
    const seq = log.appendRaw(subjects.event("lock", live!.id), encodeEvent(forged));
    violations.length = 0;
    const again = await auditStream(log.readStream(), subjects, options);
    expect(violations.map((v) => [v.seq, v.rule, v.actor])).toEqual([[seq, "lock-two-holders", { kind: "lock", id: live!.id }]]);
    expect(again.violations).toBe(1);
  });
});
