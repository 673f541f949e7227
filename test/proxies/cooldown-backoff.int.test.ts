/**
 * Proxy ban backoff over NATS, as the must-show states it: with
 * `--cooldown-backoff 2` and `--max-cooldown-ms`, the n-th consecutive ban of
 * a (proxy, target) pair lasts cooldownMs × 2^(n−1) up to the cap, as
 * `untilAt` and `proxy.list` tell; a ban after a quiet period (the previous
 * cooldown ended at least cooldownMs before) starts again at one. The
 * service runs on a manual clock, so the periods are exact.
 */
import { describe, expect, it } from "vitest";
import { ManualClock } from "../../src/actors/clock.ts";
import { uniquePrefix } from "../support/nats.ts";
import { expectOk, proxyClient, useProxyIntHarness } from "../support/proxy-fixtures.ts";

const h = useProxyIntHarness();

const COOLDOWN_MS = 60_000;
const MAX_COOLDOWN_MS = 300_000;

describe("cooldown backoff over NATS", () => {
  it("lasts cooldownMs × f^(n−1) up to the cap for the n-th consecutive ban, and starts again at one after a quiet period", async () => {
    const clock = new ManualClock(Date.parse("2026-06-01T00:00:00.000Z"));
    const prefix = uniquePrefix();
    await h.service(prefix, { cooldownMs: COOLDOWN_MS, cooldownBackoff: 2, maxCooldownMs: MAX_COOLDOWN_MS }, clock);
    const proxies = proxyClient(await h.connect(), prefix);
    expectOk(await proxies.call("register", { proxy: "p", maxLeases: 1 }));
    const lease = expectOk(await proxies.call("acquire", { ttlMs: 86_400_000, target: "shop" })).lease!;

    const ban = async () => {
      const reported = expectOk(await proxies.call("report", { leaseId: lease.id, result: "banned" }));
      const listed = expectOk(await proxies.call("list", {})).proxies![0]!.cooldowns as {
        target: string;
        untilAt: string;
        streak: number;
      }[];
      expect(listed).toEqual([{ target: "shop", untilAt: reported.cooldownUntilAt, streak: expect.any(Number) as number }]);
      return {
        lengthMs: Date.parse(reported.cooldownUntilAt!) - clock.now(),
        streak: listed[0]!.streak,
        until: Date.parse(reported.cooldownUntilAt!),
      };
    };

    // Five bans, each as the previous cooldown ends: 1×, 2×, 4×, then the cap.
    const lengths: number[] = [];
    const streaks: number[] = [];
    for (let n = 1; n <= 5; n++) {
      const b = await ban();
      lengths.push(b.lengthMs);
      streaks.push(b.streak);
      clock.set(b.until);
    }
    expect(lengths).toEqual([COOLDOWN_MS, 2 * COOLDOWN_MS, 4 * COOLDOWN_MS, MAX_COOLDOWN_MS, MAX_COOLDOWN_MS]);
    expect(streaks).toEqual([1, 2, 3, 4, 5]);

    // A ban a little less than cooldownMs after the last one ended goes on with the streak ...
    clock.advance(COOLDOWN_MS - 1);
    const sixth = await ban();
    expect(sixth).toMatchObject({ streak: 6, lengthMs: MAX_COOLDOWN_MS });
    // ... one a full quiet period after the end starts again at one.
    clock.set(sixth.until + COOLDOWN_MS);
    expect(await ban()).toMatchObject({ streak: 1, lengthMs: COOLDOWN_MS });
  });
});
