/**
 * What a bad flag value says: the fix, not the parser's words (a fraction is
 * not "not a number"), and nats-config's --listen checked before it is
 * written into a server configuration.
 */
import { InvalidArgumentError } from "commander";
import { describe, expect, it } from "vitest";
import { ConfigError, resolveConfig } from "../../src/config.ts";
import { listenAddress } from "../../src/cli/nats-config.ts";

/** The ConfigError message `settings` raise. */
function refusal(settings: Record<string, string>): string {
  try {
    resolveConfig(settings);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(settings)}`);
}

describe("serve's setting values", () => {
  it("say a fraction must be whole and a word must be a number, each naming the flag", () => {
    expect(refusal({ lockTtlMs: "1.5" })).toBe("--lock-ttl-ms: must be a whole number of milliseconds");
    expect(refusal({ lockTtlMs: "soon" })).toBe('--lock-ttl-ms: expected a number, got "soon"');
    expect(refusal({ replicas: "1.5" })).toBe("--replicas: must be a whole number");
    expect(refusal({ maxWaiters: "2.5" })).toBe("--max-waiters: must be a whole number");
    expect(refusal({ lockTtlMs: "-5" })).toBe("--lock-ttl-ms: must be positive");
  });

  it("name the flag to raise with a lock TTL above the ceiling", () => {
    expect(refusal({ lockTtlMs: "60000" })).toBe("--lock-ttl-ms: must not exceed --max-ttl-ms (raise that too)");
    expect(resolveConfig({ lockTtlMs: "60000", maxTtlMs: "60000" }).lockTtlMs).toBe(60_000);
  });
});

describe("nats-config --listen", () => {
  it("takes a host or address and a port, -1 (any free port, as nats-server reads it) included", () => {
    for (const ok of ["127.0.0.1:4222", "0.0.0.0:4222", "[::]:4222", "nats.example.com:4222", "localhost:1", "127.0.0.1:-1"])
      expect(listenAddress(ok)).toBe(ok);
  });

  it("refuses anything else, a line break or brace that would reach the configuration included", () => {
    for (const bad of ["nope", "1.2.3.4:99999", "1.2.3.4:0", "1.2.3.4:-2", ":4222", "0.0.0.0:4222\n}", "a b:4222", '"x":4222'])
      expect(() => listenAddress(bad), bad).toThrow(InvalidArgumentError);
  });
});
