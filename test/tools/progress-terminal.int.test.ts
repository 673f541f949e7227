/**
 * The progress line is wired into every long read: `replay`, `audit`,
 * `status` and `tail --from-seq` each draw it when stderr is a terminal (run
 * here under `script`, which gives the command a pseudo-terminal) and never
 * when it is not (whatever the command's exit code). What the line says (events/s, ETA) is tested on
 * ReadProgress itself (test/cli/progress.unit.test.ts).
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NatsConnection } from "@nats-io/nats-core";
import { Subjects } from "../../src/contract/subjects.ts";
import { connectNats, natsUrl, uniquePrefix } from "../support/nats.ts";
import { useTestServices } from "../support/cleanup.ts";
import { publishRaw, runCli } from "./support/cli.ts";

const BIN = fileURLToPath(new URL("../../bin/leasehold.js", import.meta.url));
const encoder = new TextEncoder();
const LOCKS = 50;
const ROUNDS = 30;
const h = useTestServices();

/** Runs `leasehold <args>` with a pseudo-terminal for its output; returns what the terminal showed. */
async function runOnTerminal(args: readonly string[]): Promise<string> {
  const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  const command = [process.execPath, BIN, ...args].map(quote).join(" ");
  // The command's own exit code does not matter here (status answers 2 without a service): only what it drew.
  return new Promise((resolve) =>
    execFile("script", ["-qec", command, "/dev/null"], { timeout: 60_000, maxBuffer: 16 << 20 }, (_error, stdout) => resolve(stdout)),
  );
}

describe("progress on a terminal", () => {
  let nc: NatsConnection;
  const prefix = uniquePrefix();

  beforeAll(async () => {
    nc = await connectNats();
    const subjects = new Subjects(prefix);
    const now = Date.now();
    const at = new Date(now).toISOString();
    const expiresAt = new Date(now + 60_000).toISOString();
    // Lock after lock acquired and released, round after round: 3,000 valid lock events.
    const messages = Array.from({ length: LOCKS * ROUNDS }, (_, i) => {
      const name = `l${i % LOCKS}`;
      const generation = Math.floor(i / LOCKS) + 1;
      return [
        { type: "LockAcquired", data: { owner: "w", generation, ttlMs: 60_000, expiresAt, previousOwner: "" } },
        { type: "LockReleased", data: { owner: "w", generation } },
      ].map(({ type, data }) => ({
        subject: subjects.event("lock", name),
        payload: encoder.encode(JSON.stringify({ type, v: 1, at, kind: "lock", id: name, data })),
      }));
    }).flat();
    await publishRaw(nc, prefix, messages, 250);
  });

  afterAll(async () => {
    await nc.close();
  });

  const common = () => ["--nats", natsUrl(), "--prefix", prefix];
  const reads: [string, string[], string][] = [
    ["replay", ["replay", "--kind", "lock", "--id", "l0"], "replay: "],
    ["audit", ["audit"], "audit: "],
    ["status", ["status"], "status: reading lock events: "],
    ["tail --from-seq", ["tail", "--from-seq", "1", "--limit", "1"], "tail: catching up: "],
  ];

  for (const [name, args, label] of reads) {
    it(`${name} draws the progress line on a terminal, and not elsewhere`, async () => {
      // status asks the running service first; the other tools read the stream alone.
      if (name === "status") await h.service(prefix);
      const shown = await runOnTerminal([...args, ...common()]);
      expect(shown).toMatch(new RegExp(`\\r${label}\\d+ messages read, at sequence \\d+ of \\d+ \\(\\d+%\\)`));
      // The line is cleared once the read is over.
      expect(shown).toContain("\r\u001b[K");

      const piped = await runCli([...args, ...common()]);
      expect(piped.stderr + piped.stdout).not.toMatch(/messages read, at sequence/);
    });
  }
});
