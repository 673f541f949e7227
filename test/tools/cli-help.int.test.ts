/** `--help` of every operator tool: exit 0, each flag documented, connection flags with their LEASEHOLD_* variables, audit's rules listed, replay's and audit's threads. */
import { describe, expect, it } from "vitest";
import { AUDIT_RULES } from "../../src/tools/audit.ts";
import { runCli } from "./support/cli.ts";

const FLAGS: Record<string, string[]> = {
  replay: ["--at", "--seq", "--kind", "--id", "--json"],
  audit: ["--from", "--to", "--json", "--progress", "--cooldown-ms", "--max-ttl-ms"],
  tail: ["--kind", "--id", "--since", "--from-seq", "--limit", "--json"],
  status: ["--json", "--all-locks", "--timeout-ms"],
  "host-load": ["--host", "--every", "--command", "--load", "--timeout", "--once"],
};

describe("--help of the operator tools", () => {
  it.each(Object.entries(FLAGS))("leasehold %s --help documents its flags", async (command, flags) => {
    const { code, stdout } = await runCli([command, "--help"]);
    expect(code).toBe(0);
    const help = stdout.replace(/\s+/g, " ");
    expect(help).toContain(`Usage: leasehold ${command} [options]`);
    for (const flag of [...flags, "--nats", "--prefix"]) expect(help).toContain(flag);
    expect(help).toContain("env: LEASEHOLD_NATS");
    expect(help).toContain("env: LEASEHOLD_PREFIX");
    expect(help).toContain("nats://127.0.0.1:4222");
    // The commands that fold the stream say how many threads they fold on.
    expect(help.includes("LEASEHOLD_TOOLS_THREADS=1 folds on one thread")).toBe(command === "replay" || command === "audit");
    if (command === "audit") {
      expect(help).toContain("env: LEASEHOLD_COOLDOWN_MS");
      for (const rule of Object.keys(AUDIT_RULES)) expect(help).toContain(` ${rule} `);
    }
  });

  it("the program's help lists the tools", async () => {
    const { code, stdout } = await runCli(["--help"]);
    expect(code).toBe(0);
    for (const command of Object.keys(FLAGS)) expect(stdout).toMatch(new RegExp(`\\n {2}${command} \\[options\\] `));
  });
});
