/**
 * Ids are exact, and so is what the operator tools print: two locks whose
 * names differ only by an invisible code point (a zero-width space, a
 * byte-order mark), by normalization (NFC against NFD) or that reorder
 * themselves on a terminal (a right-to-left override) print as two different
 * names in `status`, `replay` and `tail`, each quoted with the invisible code
 * points escaped, so an operator can tell which one to reset.
 */
import { describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { defer, startLocalServe } from "../cli/cli-process.ts";
import { runCli } from "./support/cli.ts";

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

/** Each a name an operator would read as "deploy" or "café", and how the tools must print it. */
const LOOK_ALIKES = [
  ["deploy", "deploy"],
  ["\u200Bdeploy", '"\\u200bdeploy"'],
  ["\uFEFFdeploy", '"\\ufeffdeploy"'],
  ["deplo\u202Ey", '"deplo\\u202ey"'],
  ["caf\u00E9", "caf\u00E9"],
  ["cafe\u0301", '"cafe\\u0301"'],
] as const;

/** Code points that print as nothing, or reorder the text around them, or compose with the one before. */
const HIDDEN = /[\p{Cf}\p{M}\u2028\u2029]/u;

describe("ids that look alike", () => {
  it("print as different, escaped names in status, replay and tail", async () => {
    const serve = await startLocalServe("look-alike-ids");
    const nc = await connect({ servers: serve.url, maxReconnectAttempts: 0 });
    defer(() => nc.close());
    for (const [name] of LOOK_ALIKES) {
      const reply = await nc.request("leasehold.v1.lock.acquire", encode({ name, owner: name, ttlMs: 30_000 }), { timeout: 5000 });
      expect(reply.json(), JSON.stringify(name)).toHaveProperty("lease.owner", name);
    }

    const outputs = {
      status: await runCli(["status", "--nats", serve.url]),
      replay: await runCli(["replay", "--nats", serve.url]),
      tail: await runCli(["tail", "--nats", serve.url, "--from-seq", "1", "--limit", String(LOOK_ALIKES.length)]),
    };
    for (const [tool, out] of Object.entries(outputs)) {
      expect(out.code, `${tool}: ${out.stderr}`).toBe(0);
      const lines = out.stdout.split("\n");
      for (const [name, shown] of LOOK_ALIKES) {
        expect(
          lines.some((l) => ` ${l} `.includes(` ${shown} `)),
          `${tool} shows ${JSON.stringify(name)} as ${shown}:\n${out.stdout}`,
        ).toBe(true);
      }
      expect(out.stdout, tool).not.toMatch(HIDDEN);
    }
  });
});
