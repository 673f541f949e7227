/**
 * The README's tour, run as written so it cannot go stale: every
 * `npx leasehold ...` line of its shell blocks runs through bash (quoting as a
 * user's shell reads it) against a live `leasehold serve` with its own
 * nats-server, in order. A `$ ` line's output is compared with what the
 * command prints as the doc-sample runner compares it (test/docs/samples.ts:
 * ids, etags and times learned, ports the README's), `serve`'s ready line
 * included; a command whose shown output says it was refused must exit 1,
 * every other 0; `tail`, which follows until stopped, must say it follows
 * and stop cleanly on Ctrl-C. A `serve` example naming servers of its own
 * (`--nats`) is checked for its flags only: it must get as far as reading
 * them.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { BIN, defer, freePort, leasehold, ROOT, run, tempDir } from "../cli/cli-process.ts";
import { compare, Learned, printed, type Sample } from "./samples.ts";

/** An example as the doc-sample runner compares it. */
function sample(example: Example): Sample {
  return { command: example.line, shown: printed(example.shown, ""), from: 0, to: 0 };
}

interface Example {
  /** The command as the README shows it. */
  readonly line: string;
  /** Whether the README shows it as typed (`$ `), its output to be compared. */
  readonly typed: boolean;
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
      examples.push({ line, typed: raw.startsWith("$ "), shown: lines.slice(i + 1, end === -1 ? undefined : end).join("\n") });
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
    const httpPort = await freePort();
    const env = { LEASEHOLD_NATS: `nats://127.0.0.1:${port}` };
    const asUserTypes = (line: string) => `${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)}${line.slice("npx leasehold".length)}`;
    // What differs from the README's own run: the ports (4222 and the dashboard's 7420), and so the --nats the ready line's try-command names.
    const readmePorts = (text: string) =>
      text
        .replaceAll(`call --nats nats://127.0.0.1:${port} `, "call ")
        .replaceAll(`127.0.0.1:${port}`, "127.0.0.1:4222")
        .replaceAll(`127.0.0.1:${httpPort}`, "127.0.0.1:7420");
    const learned = new Learned();
    const differences: string[] = [];

    const [serve, ...rest] = examples;
    expect(serve!.line).toBe("npx leasehold serve");
    // The README's serve as a terminal shows it, on free ports.
    const service = leasehold(["serve", "--nats-port", String(port), "--http", `127.0.0.1:${httpPort}`, "--log-format", "text"], { cwd });
    defer(async () => {
      service.child.kill("SIGTERM");
      await service.exited;
    });
    await vi.waitFor(() => expect(service.stderr()).toMatch(/ serving on .*\n/), { timeout: 30_000, interval: 50 });
    differences.push(...compare(sample(serve!), printed("", readmePorts(service.stderr())), learned));

    for (const example of rest) {
      const { line, shown, typed } = example;
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
      if (typed) differences.push(...compare(sample(example), printed(readmePorts(proc.stdout()), readmePorts(proc.stderr())), learned));
    }
    expect(differences.join("\n\n")).toBe("");
  }, 120_000);
});
