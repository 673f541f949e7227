/** The 1.2 route settings: `--route-chooser` names, `--hash-balance-factor` (> 1) and `--load-stale-ms`, with their defaults. */
import { describe, expect, it } from "vitest";
import { ConfigError, resolveConfig } from "../../src/config.ts";

describe("route chooser settings", () => {
  it("default to least-loaded, a balance factor of 1.25 and a 15 s stale window", () => {
    expect(resolveConfig({})).toMatchObject({ routeChooser: "least-loaded", hashBalanceFactor: 1.25, loadStaleMs: 15_000 });
  });

  it("take every chooser of the contract, a factor above 1 and a whole positive stale window, from strings as flags give them", () => {
    for (const routeChooser of ["least-loaded", "rendezvous", "least-load", "bounded-hash"]) {
      expect(resolveConfig({ routeChooser }).routeChooser).toBe(routeChooser);
    }
    expect(resolveConfig({ hashBalanceFactor: "1.01", loadStaleMs: "500" })).toMatchObject({ hashBalanceFactor: 1.01, loadStaleMs: 500 });
  });

  it("refuse anything else, naming the flag", () => {
    for (const [input, flag] of [
      [{ routeChooser: "least_load" }, "--route-chooser"],
      [{ hashBalanceFactor: "1" }, "--hash-balance-factor: must be a number greater than 1"],
      [{ hashBalanceFactor: "0.5" }, "--hash-balance-factor"],
      [{ hashBalanceFactor: "many" }, "--hash-balance-factor"],
      [{ loadStaleMs: "0" }, "--load-stale-ms"],
      [{ loadStaleMs: "1.5" }, "--load-stale-ms"],
    ] as const) {
      expect(() => resolveConfig(input)).toThrow(ConfigError);
      expect(() => resolveConfig(input)).toThrow(flag);
    }
  });
});
