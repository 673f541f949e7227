import { describe, expect, it } from "vitest";
import { resolveConfig } from "../../src/config.ts";
import { readyLine } from "../../src/cli/serve.ts";

describe("serve's ready line", () => {
  const config = resolveConfig({});

  it("suggests a call that reaches this service: --nats only when its server is not the tools' default", () => {
    expect(readyLine(config, "nats://127.0.0.1:4222", "/srv/.leasehold")).toMatch(/try: npx leasehold call lock\.acquire /);
    expect(readyLine(config, "nats://127.0.0.1:4333", "/srv/.leasehold")).toMatch(
      /try: npx leasehold call --nats nats:\/\/127\.0\.0\.1:4333 lock\.acquire /,
    );
    expect(readyLine(config, "nats://10.0.0.5:4222", undefined)).toMatch(/try: npx leasehold call --nats nats:\/\/10\.0\.0\.5:4222 lock/);
  });
});
