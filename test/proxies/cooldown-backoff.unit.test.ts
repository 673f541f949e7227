/**
 * Proxy ban backoff (1.1): the n-th consecutive cooldown of a (proxy,
 * target) pair lasts cooldownMs × f^(n−1), whole milliseconds, capped at
 * maxCooldownMs and never shorter than cooldownMs; a report more than
 * cooldownMs after the pair's previous cooldown ended starts a new streak;
 * the global streak and per-target streaks are kept apart; factor 1 (the
 * default) leaves every cooldown at cooldownMs.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { decideProxy } from "../../src/proxy/decide.ts";
import { cooldownLength, type ProxySettings } from "../../src/proxy/commands.ts";
import { evolveProxy, initialProxyState, type ProxyState } from "../../src/proxy/state.ts";
import { granted, registered, PROXY } from "../support/proxy-given.ts";
import { T0 } from "../support/event-builders.ts";

const DAY = 86_400_000;

/** A proxy with one long lease, L1 (no target: a report without one is global), to report on. */
function leasedProxy(): ProxyState {
  return [registered(1, { maxLeases: 2 }), granted(2, { leaseId: "L1", ttlMs: 10 * DAY })].reduce(evolveProxy, initialProxyState(PROXY));
}

/** Reports `result` on L1 for `target` at `now`; returns the new state and the recorded cooldown. */
function report(state: ProxyState, settings: ProxySettings, now: number, target = "", seq = 3) {
  const decision = decideProxy(state, { op: "report", leaseId: "L1", result: "banned", target }, now, settings);
  if (decision.outcome !== "append" || decision.type !== "ProxyCooldownStarted")
    throw new Error(`expected a cooldown, got ${JSON.stringify(decision)}`);
  const at = new Date(now).toISOString();
  const next = evolveProxy(state, { seq, event: { type: decision.type, v: 1, at, kind: "proxy", id: PROXY, data: decision.data } });
  return { state: next, cooldown: decision.data };
}

describe("proxy cooldown backoff", () => {
  const settings: ProxySettings = { cooldownMs: 1000, cooldownBackoff: 2, maxCooldownMs: 5000 };

  it("doubles each consecutive ban up to the cap, and starts again at one after a quiet period", () => {
    let state = leasedProxy();
    let now = T0;
    const lengths: number[] = [];
    const streaks: number[] = [];
    for (let i = 0; i < 5; i++) {
      const r = report(state, settings, now, "", 3 + i);
      state = r.state;
      lengths.push(r.cooldown.cooldownMs!);
      streaks.push(r.cooldown.streak!);
      expect(Date.parse(r.cooldown.untilAt) - now).toBe(r.cooldown.cooldownMs);
      // The next ban lands just as this cooldown ends.
      now = Date.parse(r.cooldown.untilAt);
    }
    expect(lengths).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect(streaks).toEqual([1, 2, 3, 4, 5]);
    // Less than cooldownMs after the end: the streak goes on.
    const within = report(state, settings, now + 999, "", 20);
    expect(within.cooldown.streak).toBe(6);
    // cooldownMs or more after the end: a new streak.
    const quiet = report(within.state, settings, Date.parse(within.cooldown.untilAt) + 1000, "", 21);
    expect(quiet.cooldown).toMatchObject({ streak: 1, cooldownMs: 1000 });
  });

  it("keeps the global streak apart from each target's", () => {
    let state = leasedProxy();
    state = report(state, settings, T0, "", 3).state;
    state = report(state, settings, T0 + 10, "", 4).state;
    const scoped = report(state, settings, T0 + 20, "shop", 5);
    expect(scoped.cooldown).toMatchObject({ target: "shop", streak: 1, cooldownMs: 1000 });
    const global = report(scoped.state, settings, T0 + 30, "", 6);
    expect(global.cooldown).toMatchObject({ target: "", streak: 3, cooldownMs: 4000 });
  });

  it("with the default factor every cooldown lasts cooldownMs, while streaks are still counted", () => {
    const plain: ProxySettings = { cooldownMs: 1000 };
    let state = leasedProxy();
    for (let i = 0; i < 4; i++) {
      const r = report(state, plain, T0 + i * 10, "x", 3 + i);
      expect(r.cooldown).toMatchObject({ cooldownMs: 1000, streak: i + 1, untilAt: new Date(T0 + i * 10 + 1000).toISOString() });
      state = r.state;
    }
  });

  it("cooldownLength is cooldownMs × f^(n−1) rounded, within [cooldownMs, max(cooldownMs, maxCooldownMs)]", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 10_000_000 }),
        fc.double({ min: 1, max: 10, noNaN: true }),
        fc.integer({ min: 1, max: DAY }),
        fc.integer({ min: 1, max: 200 }),
        (cooldownMs, factor, maxCooldownMs, streak) => {
          const length = cooldownLength({ cooldownMs, cooldownBackoff: factor, maxCooldownMs }, streak);
          const cap = Math.max(cooldownMs, maxCooldownMs);
          expect(Number.isInteger(length)).toBe(true);
          expect(length).toBeGreaterThanOrEqual(cooldownMs);
          expect(length).toBeLessThanOrEqual(cap);
          const exact = Math.round(cooldownMs * factor ** (streak - 1));
          if (exact <= cap) expect(length).toBe(Math.max(cooldownMs, exact));
          else expect(length).toBe(cap);
        },
      ),
      { numRuns: 500 },
    );
  });
});
