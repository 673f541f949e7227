/**
 * A proxy grant left in doubt (its append's acknowledgement lost until the
 * deadline) and then retried with the same requestId: the retry goes to that
 * proxy first, where the expected sequence lets only one grant land, even
 * when another proxy now ranks first. Elsewhere, JetStream's duplicate at
 * sequence 0 for the shared message id could hide a copy still to land.
 */
import { describe, expect, it } from "vitest";
import { isInDoubt } from "../../src/actors/actor-runtime.ts";
import { LogUnavailableError, type AppendOptions, type AppendResult } from "../../src/events/event-log.ts";
import { MemoryEventLog } from "../../src/events/memory-event-log.ts";
import { ManualClock } from "../../src/actors/clock.ts";
import { PROXY_T0, startProxyHarness } from "../support/proxy-harness.ts";

/** A log that loses every acknowledgement of appends to subjects ending in `lossy`, while set. */
class LossyLog extends MemoryEventLog {
  lossy: string | undefined;
  override append(subject: string, payload: Uint8Array, options: AppendOptions): Promise<AppendResult> {
    if (this.lossy !== undefined && subject.endsWith(this.lossy)) return Promise.reject(new LogUnavailableError("ack lost (test)", true));
    return super.append(subject, payload, options);
  }
}

describe("a proxy grant retried after it was left in doubt", () => {
  it("is asked of the proxy it was left in doubt on before any other, and granted once", async () => {
    const clock = new ManualClock(PROXY_T0);
    const log = new LossyLog({ now: () => clock.now(), dedupWindowMs: 120_000 });
    const h = await startProxyHarness({ clock, log });
    try {
      expect((await h.call("register", { proxy: "p1", maxLeases: 1, latencyMs: 10 })).ok).toBe(true);
      expect((await h.call("register", { proxy: "p2", maxLeases: 1, latencyMs: 20 })).ok).toBe(true);
      log.lossy = ".p1";
      const first = await h.call("acquire", { ttlMs: 60_000, requestId: "r1" });
      expect(isInDoubt(first)).toBe(true);
      log.lossy = undefined;
      // p2 now ranks first: by latency, once p1 is registered slower.
      expect((await h.call("register", { proxy: "p1", maxLeases: 1, latencyMs: 50 })).ok).toBe(true);
      const retry = await h.call("acquire", { ttlMs: 60_000, requestId: "r1" });
      expect(retry).toMatchObject({ ok: true, reply: { lease: { proxy: "p1" } } });
      expect(
        h
          .events()
          .filter((e) => e.event.type === "ProxyLeaseGranted")
          .map((e) => e.event.id),
      ).toEqual(["p1"]);
    } finally {
      await h.stop();
    }
  });
});
