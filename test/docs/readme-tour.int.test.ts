/**
 * The README's tour, run as written so it cannot go stale: every
 * `npx leasehold ...` line of its shell blocks runs through bash (quoting as a
 * user's shell reads it) against a live `leasehold serve` with its own
 * nats-server, in order. A command whose shown output says it was refused
 * must exit 1, every other 0; `tail`, which follows until stopped, must say
 * it follows and stop cleanly on Ctrl-C. A `serve` example naming servers of
 * its own (`--nats`) is checked for its flags only: it must get as far as
 * reading them.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { BIN, defer, freePort, leasehold, ROOT, run, tempDir, waitForLog } from "../cli/cli-process.ts";

interface Example {
  /** The command as the README shows it. */
  readonly line: string;
  /** The output the README shows under it, if any. */
  readonly shown: string;
}

/** The `npx leasehold` commands of the tour's shell blocks, in order. */
function tourExamples(): Example[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("## A five-minute tour");
  expect(start, "README.md has its tour").toBeGreaterThanOrEqual(0);
  const next = readme.indexOf("\n## ", start + 1);
  const tour = readme.slice(start, next === -1 ? undefined : next);
  const examples: Example[] = [];
  for (const block of tour.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = block[1]!.split("\n");
    const isCommand = (l: string) => l.startsWith("$ ") || l.startsWith("npx ");
    lines.forEach((raw, i) => {
      const line = raw.replace(/^\$ /, "");
      if (!line.startsWith("npx leasehold ")) return;
      const end = lines.findIndex((l, j) => j > i && isCommand(l));
      examples.push({ line, shown: lines.slice(i + 1, end === -1 ? undefined : end).join("\n") });
    });
  }
  return examples;
}

describe("the README's tour", () => {
  it("runs every shell example against a live service", async () => {
    const examples = tourExamples();
    expect(examples.length).toBeGreaterThan(8);
    const cwd = tempDir("tour");
    const port = await freePort();
    const env = { LEASEHOLD_NATS: `nats://127.0.0.1:${port}` };
    const asUserTypes = (line: string) => `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)}${line.slice("npx leasehold".length)}`;

    const [serve, ...rest] = examples;
    expect(serve!.line).toBe("npx leasehold serve");
    // The README's serve, on a free port and without the dashboard's fixed one.
    const service = leasehold(["serve", "--nats-port", String(port), "--http", "off", "--log-format", "json"], { cwd });
    defer(async () => {
      service.child.kill("SIGTERM");
      await service.exited;
    });
    await waitForLog(service, "leasehold serving");

    for (const { line, shown } of rest) {
      const words = line.split(/\s+/);
      if (words[2] === "serve") {
        // Its own servers (made up): the flags are read, then it fails on what the example names, not on a flag.
        const proc = run("bash", ["-c", asUserTypes(line)], { cwd });
        expect((await proc.exited).code, line).toBe(2);
        expect(proc.stderr(), line).not.toMatch(/unknown option|error: option/);
        continue;
      }
      const proc = run("bash", ["-c", asUserTypes(line)], { cwd, env });
      if (words[2] === "tail") {
        await vi.waitFor(() => expect(proc.stderr(), line).toMatch(/following/), { timeout: 15_000, interval: 50 });
        proc.child.kill("SIGINT");
        // bash -c runs its one command in its own place (exec), so the signal reaches tail itself.
        expect((await proc.exited).code ?? 0, line).toBe(0);
        continue;
      }
      const refused = /refused/.test(shown);
      expect((await proc.exited).code, `${line}\n${proc.stderr()}`).toBe(refused ? 1 : 0);
      if (shown.startsWith("{"))
        expect(Object.keys(JSON.parse(proc.stdout()) as object), line).toEqual(Object.keys(JSON.parse(shown.split("\n")[0]!) as object));
    }
  }, 120_000);
});
