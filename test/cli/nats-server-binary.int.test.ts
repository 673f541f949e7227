/** Finding the nats-server serve runs: a NATS_SERVER_BIN that cannot be used is said to be passed over, not silently replaced. */
import { afterEach, describe, expect, it, vi } from "vitest";
import { natsServerBinary } from "../../src/cluster/nats-server-binary.ts";

afterEach(() => vi.unstubAllEnvs());

describe("natsServerBinary", () => {
  it("tells its caller when NATS_SERVER_BIN names no usable binary, then finds another", async () => {
    vi.stubEnv("NATS_SERVER_BIN", "/nonexistent/nats-server");
    const notes: string[] = [];
    const path = await natsServerBinary((line) => notes.push(line));
    expect(path).not.toBe("/nonexistent/nats-server");
    expect(notes).toContainEqual(expect.stringMatching(/^ignoring NATS_SERVER_BIN=\/nonexistent\/nats-server \(missing or too old\)$/));
  });
});
