import { describe, expect, it } from "vitest";
import { isLoopback, openBusWarning } from "../../src/cli/open-bus.ts";

describe("the open-bus warning", () => {
  it("tells loopback servers from others, in every way a server is written", () => {
    for (const s of [
      "nats://127.0.0.1:4222",
      "127.0.0.5:4222",
      "localhost",
      "nats://localhost:4222",
      "nats://[::1]:4222",
      "tls://127.0.0.1",
    ])
      expect(isLoopback(s), s).toBe(true);
    for (const s of ["nats://10.0.0.5:4222", "nats.example.com:4222", "nats://128.0.0.1", "nats://127.0.0.1.evil.com", "not a url ::"])
      expect(isLoopback(s), s).toBe(false);
  });

  it("warns only when no credential is given and some server is off this machine", () => {
    const remote = ["nats://127.0.0.1:4222", "nats://10.0.0.6:4222"];
    expect(openBusWarning({ servers: remote, auth: {} })).toMatch(/^connected to nats:\/\/10\.0\.0\.6:4222 without credentials/);
    expect(openBusWarning({ servers: ["nats://127.0.0.1:4222"], auth: {} })).toBeUndefined();
    expect(openBusWarning({ servers: remote, auth: { user: "svc", pass: "pw" } })).toBeUndefined();
    expect(openBusWarning({ servers: remote, auth: { token: "t" } })).toBeUndefined();
  });
});
