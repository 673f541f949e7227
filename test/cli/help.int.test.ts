/**
 * Every command `leasehold --help` lists has help a newcomer can act on: it
 * exits 0, shows examples that use only flags the command has, and says
 * what the command does without --nats (serve starts a server; the others
 * connect to the local one).
 */
import { describe, expect, it } from "vitest";
import { leasehold } from "./cli-process.ts";

/** The stdout of `leasehold args`, which must exit 0. */
async function helpOf(args: string[]): Promise<string> {
  const proc = leasehold(args);
  expect((await proc.exited).code, proc.stderr()).toBe(0);
  return proc.stdout();
}

describe("leasehold --help and every command's", () => {
  it("shows, for each command, examples that use only its own flags", async () => {
    const commands = [...(await helpOf(["--help"])).matchAll(/^ {2}([a-z-]+) \[options\]/gm)].map((m) => m[1]!);
    expect(commands).toEqual(["serve", "call", "replay", "audit", "tail", "status", "nats-config", "dev-cluster", "host-load"]);
    const helps = await Promise.all(commands.map((command) => helpOf([command, "--help"])));
    commands.forEach((command, i) => {
      const help = helps[i]!;
      const flags = new Set([...help.matchAll(/^ {2}(?:-\w, )?(--[a-z-]+)/gm)].map((m) => m[1]!));
      const examples = /\nExamples:\n((?: {2}.*\n?)+)/.exec(help)?.[1]?.trim().split("\n") ?? [];
      expect(examples.length, `${command} has examples`).toBeGreaterThan(0);
      for (const example of examples) {
        expect(example.trim().startsWith(`leasehold ${command}`), example).toBe(true);
        for (const flag of example.replace(/"[^"]*"|'[^']*'|#.*$/g, "").match(/(?<=\s)--[a-z-]+/g) ?? [])
          expect(flags, `${command}: ${example}`).toContain(flag);
      }
      const nats = /--nats <urls> (.*?)\(env: LEASEHOLD_NATS\)/.exec(help.replace(/\s+/g, " "))?.[1];
      if (command === "serve") expect(nats).toContain("Without it serve starts its own nats-server");
      else if (nats !== undefined) expect(nats).toContain(`Without it ${command} connects to nats://127.0.0.1:4222`);
    });
  });
});
